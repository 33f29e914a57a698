"""Who may see the dashboard. Pure.

A script sends `Authorization: Bearer <DASHBOARD_TOKEN>`. A person signs in once with the
token and gets a session cookie that holds an expiry, a random nonce and an HMAC over both,
keyed by a key derived from the token: never the token itself. Changing the token ends
every session. Tokens and MACs are compared in constant time.

The sign-in and sign-out forms are same-site POSTs; the cookie is SameSite=Strict, and an
`Origin` header, when the browser sends one, must be the dashboard's own.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

SESSION_LIFETIME = timedelta(hours=12)
_KEY_LABEL = b"judge-bot dashboard session v1"
SECURE_COOKIE = "__Host-judge_dashboard"
PLAIN_COOKIE = "judge_dashboard"


def session_key(token: str) -> bytes:
    """The MAC key of sessions: derived from the token, so the token never signs directly."""
    return hmac.new(token.encode(), _KEY_LABEL, hashlib.sha256).digest()


def _mac(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def issue_session(token: str, now: datetime, nonce: str | None = None) -> str:
    """A cookie value good until `now + SESSION_LIFETIME`."""
    expires = int((now + SESSION_LIFETIME).timestamp())
    payload = f"{expires}.{nonce or secrets.token_urlsafe(16)}"
    return f"{payload}.{_mac(session_key(token), payload)}"


def session_valid(token: str, value: str | None, now: datetime) -> bool:
    """Whether `value` is a session this token issued that has not expired."""
    if not value:
        return False
    payload, _, mac = value.rpartition(".")
    expires, _, nonce = payload.partition(".")
    if not (expires.isdigit() and nonce and mac):
        return False
    if not hmac.compare_digest(mac.encode(), _mac(session_key(token), payload).encode()):
        return False
    return int(expires) > now.timestamp()


def bearer_valid(token: str, authorization: str | None) -> bool:
    """`Authorization: Bearer <token>`, the scheme in any case."""
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


def token_valid(token: str, given: str) -> bool:
    return hmac.compare_digest(given.strip().encode(), token.encode())


def is_https(scheme: str, base_url: str | None) -> bool:
    """Whether cookies must be `Secure`: the request came over https, or the public address
    is https (a proxy in front ends TLS and forwards plain http)."""
    return scheme == "https" or (base_url or "").startswith("https://")


def cookie_name(secure: bool) -> str:
    """`__Host-` binds the cookie to this host and path `/`; browsers accept it only Secure."""
    return SECURE_COOKIE if secure else PLAIN_COOKIE


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def origin_allowed(origin: str | None, scheme: str, host: str, base_url: str | None) -> bool:
    """A form POST without `Origin` (older browsers, scripts) is let through: the SameSite
    cookie is the defence. With one, it must be this server as reached, or BASE_URL."""
    if origin is None:
        return True
    allowed = {f"{scheme}://{host}".lower()}
    if base_url:
        allowed.add(_origin_of(base_url))
    return origin.strip().lower() in allowed


@dataclass(frozen=True)
class Visitor:
    """What a request brings: the header, the cookie, and when it arrived."""

    authorization: str | None
    cookie: str | None
    now: datetime


def admitted(token: str, visitor: Visitor) -> bool:
    return bearer_valid(token, visitor.authorization) or session_valid(
        token, visitor.cookie, visitor.now
    )
