"""Pytest fixtures for the fake GitHub: an App key pair, a started fake, and an App wired to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.github.client import GitHubApp, RetryPolicy
from tests.support.fakes.github_server import FakeGitHub

APP_ID = 12345
INSTALLATION_ID = 1
DEFAULT_REPO = "octo/hello"


@dataclass(frozen=True)
class KeyPair:
    private_pem: str = field(repr=False)
    public_key: rsa.RSAPublicKey


def new_key_pair() -> KeyPair:
    """A fresh App key: the private PEM the bot signs with, the public key the fake checks."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return KeyPair(pem, key.public_key())


@pytest.fixture(scope="session")
def github_keypair() -> KeyPair:
    """One RSA key pair per test session (generation is the slow part)."""
    return new_key_pair()


@pytest.fixture
async def fake_github(github_keypair: KeyPair) -> AsyncIterator[FakeGitHub]:
    """A started fake with App 12345, installation 1 and the repo `octo/hello` (branch `main`).

    Fails the test at teardown if the fake saw any request or answer that breaks GitHub's
    description; a test that provokes such a finding on purpose clears `errors` itself.
    """
    fake = FakeGitHub(app_id=APP_ID, public_key=github_keypair.public_key)
    fake.add_installation(INSTALLATION_ID, "octo")
    fake.add_repo(DEFAULT_REPO, default_branch="main", installation_id=INSTALLATION_ID)
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()
    assert fake.errors == [], "fake GitHub found problems:\n" + "\n".join(fake.errors)


@pytest.fixture
async def github_session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def github_app(
    fake_github: FakeGitHub, github_keypair: KeyPair, github_session: aiohttp.ClientSession
) -> GitHubApp:
    """The real App client pointed at the fake, with write pacing shrunk for tests."""
    return GitHubApp(
        app_id=str(APP_ID),
        private_key=github_keypair.private_pem,
        session=github_session,
        api_url=fake_github.base_url,
        graphql_url=fake_github.graphql_url,
        policy=RetryPolicy(write_interval=0.001, backoff_base=0.001, backoff_cap=0.01),
    )
