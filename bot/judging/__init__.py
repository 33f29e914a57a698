"""Judging pushes and pull requests: one `judge` check run per head sha, and the repo config."""
