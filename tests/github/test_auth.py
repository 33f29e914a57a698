"""App JWT claims and the installation token cache (no HTTP involved)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import jwt
import pytest

from bot.github.auth import AppAuthError, InstallationTokenCache, make_app_jwt
from tests.support.fakes.github_fixtures import KeyPair

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, start: datetime = NOW) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


class Fetcher:
    """Hands out numbered tokens that expire `lifetime` after the clock's current time."""

    def __init__(self, clock: Clock, lifetime: timedelta = timedelta(hours=1)) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self.calls: list[int] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.gated: set[int] | None = None  # None: every installation waits on the gate

    async def __call__(self, installation_id: int) -> tuple[str, datetime]:
        self.calls.append(installation_id)
        if self.gated is None or installation_id in self.gated:
            await self.gate.wait()
        count = self.calls.count(installation_id)
        return f"tok-{installation_id}-{count}", self.clock() + self.lifetime


def test_jwt_claims_are_backdated_and_short_lived(github_keypair: KeyPair) -> None:
    """iat is 60 s before now, exp 9 minutes after, iss is the App id, signed RS256."""
    token = make_app_jwt("12345", github_keypair.private_pem, NOW)
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    claims = jwt.decode(
        token,
        github_keypair.public_key,
        algorithms=["RS256"],
        options={"verify_exp": False, "verify_iat": False},
    )
    assert claims == {
        "iss": "12345",
        "iat": int(NOW.timestamp()) - 60,
        "exp": int(NOW.timestamp()) + 9 * 60,
    }
    # GitHub refuses a JWT whose life exceeds 10 minutes.
    assert claims["exp"] - claims["iat"] <= 10 * 60


def test_jwt_is_not_verifiable_with_another_key(github_keypair: KeyPair) -> None:
    """A token signed with our key fails verification against a different public key."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    token = make_app_jwt("12345", github_keypair.private_pem, datetime.now(UTC))
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, other, algorithms=["RS256"])


def test_jwt_rejects_naive_time(github_keypair: KeyPair) -> None:
    """A naive datetime has no defined instant, so it is refused."""
    with pytest.raises(ValueError, match="timezone"):
        make_app_jwt("1", github_keypair.private_pem, NOW.replace(tzinfo=None))


def test_bad_key_error_does_not_echo_the_key() -> None:
    """A malformed key gives a clear error that carries no key material."""
    secret = "-----BEGIN RSA PRIVATE KEY-----\nnot-really-a-key-SECRETBYTES\n-----END RSA"
    with pytest.raises(AppAuthError) as info:
        make_app_jwt("1", secret, NOW)
    assert "SECRETBYTES" not in str(info.value)
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


@pytest.mark.parametrize("kind", ["ec", "encrypted"])
def test_a_key_that_is_not_a_plain_rsa_key_is_refused(kind: str) -> None:
    """An EC key, or an RSA key behind a passphrase, cannot sign GitHub's RS256 JWT."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if kind == "ec":
        key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey = ec.generate_private_key(
            ec.SECP256R1()
        )
        protection: serialization.KeySerializationEncryption = serialization.NoEncryption()
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        protection = serialization.BestAvailableEncryption(b"passphrase")
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, protection
    ).decode()
    with pytest.raises(AppAuthError, match="not a usable RSA key"):
        make_app_jwt("1", pem, NOW)


def test_the_key_is_loaded_once_for_many_jwts(github_keypair: KeyPair) -> None:
    """Loading a PEM costs tens of milliseconds; each JWT after the first reuses the key."""
    from bot.github.auth import _signing_key

    _signing_key.cache_clear()
    tokens = {
        make_app_jwt("1", github_keypair.private_pem, NOW + timedelta(seconds=s)) for s in range(5)
    }
    assert len(tokens) == 5
    assert _signing_key.cache_info().misses == 1
    assert _signing_key.cache_info().hits == 4


async def test_token_is_reused_while_fresh() -> None:
    """Two requests for the same installation fetch once."""
    clock = Clock()
    fetch = Fetcher(clock)
    cache = InstallationTokenCache(fetch, clock=clock)
    first = await cache.get(7)
    clock.now += timedelta(minutes=30)
    assert await cache.get(7) == first
    assert fetch.calls == [7]


async def test_token_refreshes_five_minutes_before_expiry() -> None:
    """Reused until just before the 5-minute margin, refetched from the margin on."""
    clock = Clock()
    fetch = Fetcher(clock)
    cache = InstallationTokenCache(fetch, clock=clock)
    first = await cache.get(1)
    clock.now = NOW + timedelta(minutes=55) - timedelta(seconds=1)
    assert await cache.get(1) == first
    clock.now = NOW + timedelta(minutes=55)
    second = await cache.get(1)
    assert second != first
    assert fetch.calls == [1, 1]


async def test_concurrent_callers_share_one_fetch() -> None:
    """Twenty callers racing for a cold installation cause exactly one fetch."""
    clock = Clock()
    fetch = Fetcher(clock)
    fetch.gate.clear()
    cache = InstallationTokenCache(fetch, clock=clock)
    waiting = [asyncio.create_task(cache.get(3)) for _ in range(20)]
    await asyncio.sleep(0)
    fetch.gate.set()
    tokens = await asyncio.gather(*waiting)
    assert set(tokens) == {"tok-3-1"}
    assert fetch.calls == [3]


async def test_installations_refresh_independently() -> None:
    """A slow fetch for one installation does not block another installation."""
    clock = Clock()
    fetch = Fetcher(clock)
    fetch.gate.clear()
    fetch.gated = {1}
    cache = InstallationTokenCache(fetch, clock=clock)
    slow = asyncio.create_task(cache.get(1))
    await asyncio.sleep(0)
    assert await cache.get(2) == "tok-2-1"
    assert not slow.done()
    fetch.gate.set()
    assert await slow == "tok-1-1"


async def test_cache_is_bounded() -> None:
    """Beyond maxsize the least recently used installation is dropped and refetched later."""
    clock = Clock()
    fetch = Fetcher(clock)
    cache = InstallationTokenCache(fetch, clock=clock, maxsize=2)
    for installation in (1, 2, 3):
        await cache.get(installation)
    assert len(cache) == 2
    assert 1 not in cache
    await cache.get(1)
    assert fetch.calls == [1, 2, 3, 1]


async def test_failed_fetch_propagates_and_is_retried_next_time() -> None:
    """A failing fetch reaches the caller, leaves nothing cached, and the next call tries again."""
    clock = Clock()
    attempts: list[int] = []

    async def flaky(installation_id: int) -> tuple[str, datetime]:
        attempts.append(installation_id)
        if len(attempts) == 1:
            raise RuntimeError("GitHub said no")
        return "tok", clock() + timedelta(hours=1)

    cache = InstallationTokenCache(flaky, clock=clock)
    with pytest.raises(RuntimeError):
        await cache.get(5)
    assert await cache.get(5) == "tok"
    assert attempts == [5, 5]


async def test_invalidate_forces_a_new_fetch() -> None:
    """A token GitHub refused is forgotten."""
    clock = Clock()
    fetch = Fetcher(clock)
    cache = InstallationTokenCache(fetch, clock=clock)
    await cache.get(1)
    cache.invalidate(1)
    await cache.get(1)
    assert fetch.calls == [1, 1]


async def test_naive_expiry_from_fetch_is_refused() -> None:
    """An expiry without timezone cannot be compared safely; it is an error, not a guess."""
    clock = Clock()

    async def naive(installation_id: int) -> tuple[str, datetime]:
        return "tok", datetime(2030, 1, 1)  # noqa: DTZ001 - the point of the test

    cache = InstallationTokenCache(naive, clock=clock)
    with pytest.raises(AppAuthError):
        await cache.get(1)
    assert len(cache) == 0
