"""Replaying GitHub's own example payloads, signed as GitHub signs them."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent.parent / "fixtures" / "github"
WEBHOOKS = FIXTURES / "webhooks"

SECRET = "test-webhook-secret-0123456789"


def example(event: str, name: str) -> bytes:
    """The exact bytes of one of GitHub's example payloads."""
    return (WEBHOOKS / event / f"{name}.json").read_bytes()


def all_examples() -> list[tuple[str, str, bytes]]:
    """(event, file stem, bytes) for every example the manifest lists."""
    manifest = json.loads((WEBHOOKS / "manifest.json").read_text())
    found: list[tuple[str, str, bytes]] = []
    for entry in manifest["examples"]:
        path = FIXTURES / entry["file"]
        found.append((entry["event"], path.stem, path.read_bytes()))
    return found


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_headers(
    event: str,
    body: bytes,
    *,
    secret: str = SECRET,
    delivery_id: str | None = None,
    content_type: str = "application/json",
) -> dict[str, str]:
    return {
        "Content-Type": content_type,
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(body, secret),
        "User-Agent": "GitHub-Hookshot/test",
    }


def payload_with(body: bytes, **changes: Any) -> bytes:
    data = json.loads(body)
    data.update(changes)
    return json.dumps(data).encode()
