"""The one-time code GitHub sends back, exchanged for the new App's credentials
(`POST /app-manifests/{code}/conversions`, no authentication: the code is the credential).

A code works once and for an hour. Its answer holds the only copy of the private key
GitHub ever sends, so it is kept in `SecretStr`s until it is written, and never logged.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

__all__ = ["ConversionError", "RegisteredApp", "convert_code", "plausible_code"]

API_VERSION = "2022-11-28"
_CODE = re.compile(r"[A-Za-z0-9_-]{1,128}")


class ConversionError(Exception):
    """GitHub did not hand over the App; the message says why, for the person."""

    def __init__(self, message: str, *, unknown_code: bool = False) -> None:
        super().__init__(message)
        self.unknown_code = unknown_code


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


async def convert_code(session: aiohttp.ClientSession, api_url: str, code: str) -> RegisteredApp:
    url = f"{api_url.rstrip('/')}/app-manifests/{quote(code, safe='')}/conversions"
    headers = {
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": "judge-bot",
    }
    try:
        async with session.post(url, headers=headers) as response:
            status = response.status
            body = await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ConversionError(
            f"GitHub could not be reached at {api_url} ({type(exc).__name__})"
        ) from None
    if status == 404:
        raise ConversionError(
            "GitHub does not know this code: a code works once and for an hour.",
            unknown_code=True,
        )
    if status != 201:
        raise ConversionError(f"GitHub answered {status}: {_message(body)}")
    try:
        return RegisteredApp.model_validate_json(body)
    except ValidationError:
        raise ConversionError("GitHub's answer did not hold the App's credentials") from None


def _message(body: bytes) -> str:
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message)[:200] if message else "no explanation"
