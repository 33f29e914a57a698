"""Where GitHub reaches this server, and where GitHub's own pages are, as plain values.

The server's public address is `BASE_URL`; without it, the address the person's browser
used for `/` (which GitHub can reach only if it is public). Webhooks go to
`WEBHOOK_PROXY_URL` when set (a smee.io channel forwarding to a server GitHub cannot
reach), else to the public address plus `WEBHOOK_PATH`.

GitHub's web pages live on the API's host without `api.` (github.com, SUBDOMAIN.ghe.com)
or, on GitHub Enterprise Server, on the host whose API is at `/api/v3`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote, urlencode, urlsplit

from bot.github.web import web_url

__all__ = [
    "CALLBACK_PATH",
    "Addresses",
    "Source",
    "addresses_for",
    "apps_settings_url",
    "install_url",
    "new_app_url",
]

CALLBACK_PATH = "/setup/callback"
# After an installation GitHub sends the person here: the status page once restarted.
SETUP_PATH = "/"


class Source(StrEnum):
    BASE_URL = "BASE_URL"
    WEBHOOK_PROXY_URL = "WEBHOOK_PROXY_URL"
    REQUEST = "this page's address"


@dataclass(frozen=True)
class Addresses:
    base_url: str
    base_source: Source
    hook_url: str
    hook_source: Source
    redirect_url: str
    setup_url: str
    # What the person should fix before registering, in words (never a secret).
    warnings: tuple[str, ...] = ()


def addresses_for(
    *,
    base_url: str | None,
    webhook_proxy_url: str | None,
    webhook_path: str,
    request_origin: str,
) -> Addresses:
    """The addresses the manifest carries, and what is wrong with them for GitHub."""
    base = (base_url or request_origin).rstrip("/")
    base_source = Source.BASE_URL if base_url else Source.REQUEST
    if webhook_proxy_url:
        hook_url, hook_source = webhook_proxy_url, Source.WEBHOOK_PROXY_URL
    else:
        hook_url, hook_source = base + webhook_path, base_source
    warnings: list[str] = []
    if base_source is Source.REQUEST:
        warnings.append(
            f"BASE_URL is not set, so the App is registered with this page's address, {base}. "
            "Set BASE_URL to the address GitHub and your browser reach this server at."
        )
    host = urlsplit(hook_url).hostname or ""
    if hook_source is not Source.WEBHOOK_PROXY_URL and not publicly_reachable(host):
        warnings.append(
            f"GitHub cannot deliver webhooks to {host}: set WEBHOOK_PROXY_URL to a smee.io "
            "channel (development) or BASE_URL to a public address, then restart."
        )
    return Addresses(
        base_url=base,
        base_source=base_source,
        hook_url=hook_url,
        hook_source=hook_source,
        redirect_url=base + CALLBACK_PATH,
        setup_url=base + SETUP_PATH,
        warnings=tuple(warnings),
    )


def publicly_reachable(host: str) -> bool:
    """False for names and addresses that never leave this machine or network."""
    name = host.lower().rstrip(".")
    if not name or name == "localhost" or name.endswith((".localhost", ".local", ".internal")):
        return False
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return "." in name  # a bare name ("judge") resolves only on a local network
    return address.is_global


def apps_settings_url(api_url: str, org: str | None) -> str:
    """The page listing the Apps of the user (or of `org`): where a registered App is."""
    owner = f"/organizations/{quote(org, safe='')}" if org else ""
    return f"{web_url(api_url)}{owner}/settings/apps"


def new_app_url(api_url: str, org: str | None, state: str) -> str:
    """The page that registers an App from a posted manifest, for a user or an org."""
    return f"{apps_settings_url(api_url, org)}/new?{urlencode({'state': state})}"


def install_url(app_html_url: str) -> str:
    return app_html_url.rstrip("/") + "/installations/new"
