"""The one-time code GitHub sends back, exchanged for the new App's credentials
(`POST /app-manifests/{code}/conversions`, no authentication: the code is the credential).

A code works once and for an hour. Its answer holds the only copy of the private key
GitHub ever sends, so it is kept in `SecretStr`s until it is written, and never logged.

GitHub creates the App before it sends the person back with the code, so a failed exchange
never calls for starting again (that registers a second App): an unreachable GitHub, a
timeout or a 5xx is `retryable` with the same code, and the message names the host tried,
the proxy gone through and the cause (never the code, which is the credential).
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote, urlsplit

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from bot.intake.proxy import proxy_address

__all__ = ["ConversionError", "RegisteredApp", "convert_code", "plausible_code"]

API_VERSION = "2022-11-28"
_CODE = re.compile(r"[A-Za-z0-9_-]{1,128}")


class ConversionError(Exception):
    """GitHub did not hand over the App; the message says why, for the person.
    `retryable`: the same code may work once GitHub answers."""

    def __init__(
        self, message: str, *, unknown_code: bool = False, retryable: bool = False
    ) -> None:
        super().__init__(message)
        self.unknown_code = unknown_code
        self.retryable = retryable


class RegisteredApp(BaseModel):
    """What the conversion answers, as far as judge-bot uses it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: int
    slug: str = Field(pattern=r"^[A-Za-z0-9_-]{1,100}$")
    name: str
    html_url: str = Field(pattern=r"^https?://\S+$")
    pem: SecretStr
    webhook_secret: SecretStr | None
    client_id: str
    client_secret: SecretStr

    def credentials(self) -> dict[str, str]:
        """The settings judge-bot starts with, by their names (Probot's)."""
        values = {
            "APP_ID": str(self.id),
            "PRIVATE_KEY": self.pem.get_secret_value(),
            "WEBHOOK_SECRET": ""
            if self.webhook_secret is None
            else self.webhook_secret.get_secret_value(),
            "GITHUB_CLIENT_ID": self.client_id,
            "GITHUB_CLIENT_SECRET": self.client_secret.get_secret_value(),
        }
        return {name: value for name, value in values.items() if value}


def plausible_code(code: str | None) -> bool:
    """Whether `code` could be one of GitHub's (it goes into a URL path)."""
    return code is not None and _CODE.fullmatch(code) is not None


async def convert_code(
    session: aiohttp.ClientSession, api_url: str, code: str, *, proxy: str | None = None
) -> RegisteredApp:
    """The App GitHub created, through `proxy` when one is given."""
    url = f"{api_url.rstrip('/')}/app-manifests/{quote(code, safe='')}/conversions"
    headers = {
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": "judge-bot",
    }
    host = urlsplit(api_url).netloc or api_url
    try:
        async with session.post(url, headers=headers, proxy=proxy) as response:
            status = response.status
            body = await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        through = f" through the proxy {proxy_address(proxy)}" if proxy else ""
        raise ConversionError(
            f"GitHub could not be reached at {host}{through}: {unreachable_cause(exc)}.",
            retryable=True,
        ) from None
    if status == 404:
        raise ConversionError(
            "GitHub does not know this code: a code works once and for an hour.",
            unknown_code=True,
        )
    if status != 201:
        raise ConversionError(
            f"GitHub answered {status}: {_message(body)} (at {host}).",
            retryable=status >= 500 or status in (408, 429),
        )
    try:
        return RegisteredApp.model_validate_json(body)
    except ValidationError:
        raise ConversionError("GitHub's answer did not hold the App's credentials") from None


def unreachable_cause(exc: BaseException) -> str:
    """Why a request got no answer, in words. Built from the exception's kind and fields,
    never its text, which may carry the URL and so the code."""
    if isinstance(exc, TimeoutError):
        return "no answer in time (timed out)"
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return f"the proxy answered {exc.status} {exc.message}".rstrip()
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return "the proxy could not be connected to"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "its TLS certificate is not trusted (SSL_CERT_FILE names the certificates to trust)"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "the host name does not resolve"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"the connection failed ({exc.os_error.strerror or type(exc.os_error).__name__})"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the connection closed before an answer"
    return type(exc).__name__


def _message(body: bytes) -> str:
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message)[:200] if message else "no explanation"
