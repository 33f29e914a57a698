"""Who may see the dashboard: tokens, signed sessions and origins, as tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.dashboard.access import (
    PLAIN_COOKIE,
    SECURE_COOKIE,
    SESSION_LIFETIME,
    Visitor,
    admitted,
    bearer_valid,
    cookie_name,
    is_https,
    issue_session,
    origin_allowed,
    session_key,
    session_valid,
    token_valid,
)

TOKEN = "s3cret-token"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("authorization", "valid"),
    [
        (f"Bearer {TOKEN}", True),
        (f"bearer {TOKEN}", True),
        (f"Bearer  {TOKEN} ", True),
        (f"Bearer {TOKEN}x", False),
        (f"Basic {TOKEN}", False),
        (TOKEN, False),
        ("Bearer ", False),
        ("", False),
        (None, False),
    ],
)
def test_bearer(authorization: str | None, valid: bool) -> None:
    assert bearer_valid(TOKEN, authorization) is valid


def test_the_session_never_holds_the_token() -> None:
    value = issue_session(TOKEN, NOW, nonce="n0nce")
    assert TOKEN not in value
    assert session_key(TOKEN) != TOKEN.encode()
    assert value.startswith(f"{int((NOW + SESSION_LIFETIME).timestamp())}.n0nce.")
    assert issue_session(TOKEN, NOW) != issue_session(TOKEN, NOW)  # a fresh nonce each time


def _tampered(value: str) -> str:
    expires, nonce, mac = value.split(".")
    return f"{int(expires) + 3600}.{nonce}.{mac}"


@pytest.mark.parametrize(
    ("value", "at", "valid"),
    [
        (issue_session(TOKEN, NOW), NOW, True),
        (issue_session(TOKEN, NOW), NOW + SESSION_LIFETIME - timedelta(seconds=1), True),
        (issue_session(TOKEN, NOW), NOW + SESSION_LIFETIME, False),
        (issue_session("another token", NOW), NOW, False),
        (_tampered(issue_session(TOKEN, NOW)), NOW, False),
        (issue_session(TOKEN, NOW)[:-1], NOW, False),
        ("123.abc", NOW, False),
        ("x.abc.def", NOW, False),
        ("..", NOW, False),
        ("", NOW, False),
        (None, NOW, False),
    ],
)
def test_session(value: str | None, at: datetime, valid: bool) -> None:
    assert session_valid(TOKEN, value, at) is valid


@pytest.mark.parametrize(
    ("given", "valid"), [(TOKEN, True), (f" {TOKEN}\n", True), ("s3cret", False), ("", False)]
)
def test_typed_token(given: str, valid: bool) -> None:
    assert token_valid(TOKEN, given) is valid


@pytest.mark.parametrize(
    ("scheme", "base_url", "secure"),
    [
        ("https", None, True),
        ("http", "https://judge.example.org", True),
        ("http", "http://localhost:3000", False),
        ("http", None, False),
    ],
)
def test_secure_cookies(scheme: str, base_url: str | None, secure: bool) -> None:
    assert is_https(scheme, base_url) is secure
    assert cookie_name(secure) == (SECURE_COOKIE if secure else PLAIN_COOKIE)


@pytest.mark.parametrize(
    ("origin", "base_url", "allowed"),
    [
        (None, None, True),
        ("http://127.0.0.1:3000", None, True),
        ("HTTP://127.0.0.1:3000", None, True),
        ("http://127.0.0.1:3001", None, False),
        ("https://127.0.0.1:3000", None, False),
        ("null", None, False),
        ("https://judge.example.org", "https://judge.example.org/base", True),
        ("https://evil.example", "https://judge.example.org", False),
    ],
)
def test_origin(origin: str | None, base_url: str | None, allowed: bool) -> None:
    assert origin_allowed(origin, "http", "127.0.0.1:3000", base_url) is allowed


@pytest.mark.parametrize(
    ("authorization", "cookie", "allowed"),
    [
        (f"Bearer {TOKEN}", None, True),
        (None, issue_session(TOKEN, NOW), True),
        ("Bearer wrong", issue_session(TOKEN, NOW), True),
        ("Bearer wrong", None, False),
        (None, None, False),
    ],
)
def test_admitted(authorization: str | None, cookie: str | None, allowed: bool) -> None:
    assert admitted(TOKEN, Visitor(authorization, cookie, NOW)) is allowed
