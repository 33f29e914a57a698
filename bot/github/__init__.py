"""GitHub access: App auth and installation tokens, a rate-limit-aware client, typed calls.
Knows no feature; every feature reaches GitHub through `gateway`.

    auth          the App's JWT and the installation-token cache
    client        gidgethub client honouring rate limits, retries and write pacing
    gateway       every repository operation the features use, one typed call each
    review_query  the one GraphQL query for blobs, CI, commits, reviews, comments and
                  closing issues
    types         what GitHub says about a change, as plain data (pure)
    web           GitHub's web pages for an API address (pure)
"""
