"""Where GitHub reaches this server, and where GitHub's own pages are."""

from __future__ import annotations

import pytest

from bot.github.web import web_url
from bot.registration.addresses import (
    Source,
    addresses_for,
    install_url,
    new_app_url,
    publicly_reachable,
)

PATH = "/api/github/webhooks"


@pytest.mark.parametrize(
    ("base", "proxy", "origin", "hook", "hook_source", "redirect", "warnings"),
    [
        (
            "https://judge.example.com",
            None,
            "http://localhost:3000",
            "https://judge.example.com/api/github/webhooks",
            Source.BASE_URL,
            "https://judge.example.com/setup/callback",
            [],
        ),
        (
            None,
            "https://smee.io/abc",
            "http://localhost:3000",
            "https://smee.io/abc",
            Source.WEBHOOK_PROXY_URL,
            "http://localhost:3000/setup/callback",
            ["BASE_URL is not set"],
        ),
        (
            None,
            None,
            "http://127.0.0.1:3000",
            "http://127.0.0.1:3000/api/github/webhooks",
            Source.REQUEST,
            "http://127.0.0.1:3000/setup/callback",
            ["BASE_URL is not set", "GitHub cannot deliver webhooks to 127.0.0.1"],
        ),
        (
            "http://localhost:3000/",
            None,
            "http://other:1",
            "http://localhost:3000/api/github/webhooks",
            Source.BASE_URL,
            "http://localhost:3000/setup/callback",
            ["GitHub cannot deliver webhooks to localhost"],
        ),
    ],
)
def test_addresses(
    base: str | None,
    proxy: str | None,
    origin: str,
    hook: str,
    hook_source: Source,
    redirect: str,
    warnings: list[str],
) -> None:
    addresses = addresses_for(
        base_url=base, webhook_proxy_url=proxy, webhook_path=PATH, request_origin=origin
    )
    assert addresses.hook_url == hook
    assert addresses.hook_source is hook_source
    assert addresses.redirect_url == redirect
    assert addresses.setup_url == redirect.removesuffix("setup/callback")
    assert len(addresses.warnings) == len(warnings)
    for said, expected in zip(addresses.warnings, warnings, strict=True):
        assert said.startswith(expected)


@pytest.mark.parametrize(
    ("host", "reachable"),
    [
        ("judge.example.com", True),
        ("140.82.112.3", True),
        ("localhost", False),
        ("app.localhost", False),
        ("judge.local", False),
        ("judge.internal", False),
        ("judge", False),
        ("", False),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("192.168.1.20", False),
        ("::1", False),
        ("LOCALHOST.", False),
    ],
)
def test_publicly_reachable(host: str, reachable: bool) -> None:
    assert publicly_reachable(host) is reachable


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://api.github.com/", "https://github.com"),
        ("https://api.acme.ghe.com", "https://acme.ghe.com"),
        ("https://github.example.com/api/v3", "https://github.example.com"),
        ("http://ghes.local:8080/api/v3/", "http://ghes.local:8080"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
    ],
)
def test_web_url(api: str, web: str) -> None:
    assert web_url(api) == web


def test_new_app_url_for_a_user_an_org_and_ghes() -> None:
    assert (
        new_app_url("https://api.github.com", None, "s.1")
        == "https://github.com/settings/apps/new?state=s.1"
    )
    assert (
        new_app_url("https://api.github.com", "my org", "s")
        == "https://github.com/organizations/my%20org/settings/apps/new?state=s"
    )
    assert (
        new_app_url("https://ghe.example.com/api/v3", "acme", "s")
        == "https://ghe.example.com/organizations/acme/settings/apps/new?state=s"
    )


def test_install_url() -> None:
    assert install_url("https://github.com/apps/judge") == (
        "https://github.com/apps/judge/installations/new"
    )
    assert install_url("https://github.com/apps/judge/") == (
        "https://github.com/apps/judge/installations/new"
    )
