"""GitHub's web pages (as opposed to its API), as plain values.

They live on the API's host without `api.` (github.com, SUBDOMAIN.ghe.com) or, on GitHub
Enterprise Server, on the host whose API is at `/api/v3`.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def web_url(api_url: str) -> str:
    """GitHub's web address for a REST API address."""
    parts = urlsplit(api_url)
    host, path = parts.netloc, parts.path.rstrip("/")
    if path.endswith("/api/v3"):
        path = path.removesuffix("/api/v3")
    elif not path and host.lower().startswith("api."):
        host = host[len("api.") :]
    return f"{parts.scheme}://{host}{path}"
