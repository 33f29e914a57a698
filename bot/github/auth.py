"""GitHub App authentication: the App JWT and a cache of installation tokens.

Exceptions::

    AppAuthError            the App JWT could not be signed, or a fetched token was malformed

Neither the private key nor any token ever appears in an exception message or a log line.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import jwt
from cachetools import LRUCache
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

# GitHub rejects an `iat` in the future; backdating absorbs clock drift between us and GitHub.
JWT_BACKDATE = timedelta(seconds=60)
# GitHub caps App JWTs at 10 minutes; stay under it so drift never makes one too long-lived.
JWT_LIFETIME = timedelta(minutes=9)
# A token handed out just before it expires can die mid-job; treat it as stale this early.
TOKEN_REFRESH_MARGIN = timedelta(minutes=5)

TokenFetcher = Callable[[int], Awaitable[tuple[str, datetime]]]
WallClock = Callable[[], datetime]


class AppAuthError(Exception):
    """The App could not authenticate (bad key, malformed token response)."""


def make_app_jwt(app_id: str, private_key: str, now: datetime) -> str:
    """Sign the JWT that authenticates as the App itself (RS256, backdated, 9 minute life)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    claims = {
        "iat": int((now - JWT_BACKDATE).timestamp()),
        "exp": int((now + JWT_LIFETIME).timestamp()),
        "iss": app_id,
    }
    try:
        return jwt.encode(claims, _signing_key(private_key), algorithm="RS256")
    except (ValueError, TypeError, UnsupportedAlgorithm, jwt.PyJWTError):
        # `from None`: the chained error could carry fragments of the key.
        raise AppAuthError("could not sign the App JWT: the key is not a usable RSA key") from None


@functools.lru_cache(maxsize=4)
def _signing_key(private_key: str) -> RSAPrivateKey:
    """The PEM loaded once: loading checks the key, about 40 ms of CPU on the event loop
    for each JWT otherwise, and the App signs one for every installation token it fetches."""
    key = serialization.load_pem_private_key(private_key.encode(), password=None)
    if not isinstance(key, RSAPrivateKey):
        raise TypeError("GitHub App keys are RSA keys")
    return key


@dataclass(frozen=True)
class _CachedToken:
    token: str = field(repr=False)
    expires_at: datetime


class InstallationTokenCache:
    """Installation tokens by installation id, reused until shortly before they expire.

    Bounded (least recently used entries fall out). At most one fetch per installation runs at a
    time: concurrent callers wait on a per-installation lock and then find the fresh token.
    """

    def __init__(
        self,
        fetch: TokenFetcher,
        *,
        clock: WallClock,
        maxsize: int = 1024,
        refresh_margin: timedelta = TOKEN_REFRESH_MARGIN,
    ) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self._fetch = fetch
        self._clock = clock
        self._margin = refresh_margin
        self._tokens: LRUCache[int, _CachedToken] = LRUCache(maxsize=maxsize)
        # Lock plus the number of callers using it, so idle locks are dropped and the map
        # stays as small as the set of installations being refreshed right now.
        self._locks: dict[int, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, installation_id: object) -> bool:
        return installation_id in self._tokens

    def _usable(self, installation_id: int) -> str | None:
        cached = self._tokens.get(installation_id)
        if cached is None or self._clock() >= cached.expires_at - self._margin:
            return None
        return cached.token

    async def get(self, installation_id: int) -> str:
        """A token for the installation, fetching a new one only when needed."""
        token = self._usable(installation_id)
        if token is not None:
            return token
        lock, users = self._locks.get(installation_id, (asyncio.Lock(), 0))
        self._locks[installation_id] = (lock, users + 1)
        try:
            async with lock:
                token = self._usable(installation_id)
                if token is not None:
                    return token
                token, expires_at = await self._fetch(installation_id)
                if expires_at.tzinfo is None:
                    raise AppAuthError("installation token expiry has no timezone")
                self._tokens[installation_id] = _CachedToken(token, expires_at)
                return token
        finally:
            lock, users = self._locks[installation_id]
            if users <= 1:
                del self._locks[installation_id]
            else:
                self._locks[installation_id] = (lock, users - 1)

    def invalidate(self, installation_id: int) -> None:
        """Forget a token GitHub has refused (revoked or the installation changed)."""
        self._tokens.pop(installation_id, None)
