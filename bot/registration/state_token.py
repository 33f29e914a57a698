"""The `state` value GitHub hands back with the one-time code, proving the callback answers
a form this process showed, recently.

A value is `<expiry>.<nonce>.<mac>`: the expiry in Unix seconds, a random nonce, and an
HMAC-SHA256 of both under a key that lives only in this process's memory. A restart
therefore voids every form shown before it; the person starts again from `/`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from enum import StrEnum

__all__ = ["STATE_LIFETIME", "StateCheck", "StateSigner", "issue_state", "verify_state"]

# Long enough to read GitHub's form and choose a name, short enough not to linger.
STATE_LIFETIME = timedelta(hours=1)
MAX_STATE_LENGTH = 200


class StateCheck(StrEnum):
    VALID = "valid"
    MISSING = "missing"
    MALFORMED = "malformed"
    FORGED = "forged"
    EXPIRED = "expired"


def _mac(key: bytes, message: str) -> str:
    digest = hmac.new(key, message.encode("ascii"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def issue_state(key: bytes, now: datetime, nonce: str) -> str:
    expires = int((now + STATE_LIFETIME).timestamp())
    body = f"{expires}.{nonce}"
    return f"{body}.{_mac(key, body)}"


def verify_state(key: bytes, state: str | None, now: datetime) -> StateCheck:
    if not state:
        return StateCheck.MISSING
    if len(state) > MAX_STATE_LENGTH or not state.isascii():
        return StateCheck.MALFORMED
    expires, dot, rest = state.partition(".")
    nonce, dot2, mac = rest.partition(".")
    if not (dot and dot2 and expires.isdigit() and nonce and mac):
        return StateCheck.MALFORMED
    if not hmac.compare_digest(mac.encode("ascii"), _mac(key, f"{expires}.{nonce}").encode()):
        return StateCheck.FORGED
    if now.timestamp() >= int(expires):
        return StateCheck.EXPIRED
    return StateCheck.VALID


class StateSigner:
    """A per-process key, and states issued and checked with it."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)

    def issue(self, now: datetime) -> str:
        return issue_state(self._key, now, secrets.token_urlsafe(12))

    def verify(self, state: str | None, now: datetime) -> StateCheck:
        return verify_state(self._key, state, now)
