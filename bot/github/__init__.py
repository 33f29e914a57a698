"""GitHub access: App auth and installation tokens, a rate-limit-aware client, typed calls."""
