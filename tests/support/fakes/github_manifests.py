"""The fake GitHub: registering an App from a manifest (one-time code, no auth).

GitHub's web side cannot be driven here, so a test plays it with `register`: the manifest
the person's browser would post, accepted as GitHub's form would accept it, becomes an App
waiting behind a one-time code. `apps/create-from-manifest` then hands the App over once;
an unknown or used code answers 404, as GitHub does.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.support.fakes import github_openapi as oa
from tests.support.fakes.github_http import FakeGitHubError, Handler, Incoming, Reply

if TYPE_CHECKING:
    from tests.support.fakes.github_server import FakeGitHub
    from tests.support.fakes.github_shapes import Shapes


@dataclass(frozen=True)
class PendingApp:
    """An App GitHub created from a manifest, not yet handed over."""

    id: int
    slug: str
    manifest: dict[str, Any]
    pem: str = field(repr=False)
    webhook_secret: str | None = field(repr=False)
    client_secret: str = field(repr=False)
    owner: str


class ManifestHandlers:
    def __init__(self, fake: FakeGitHub, shapes: Shapes) -> None:
        self.fake = fake
        self.shapes = shapes
        self.pending: dict[str, PendingApp] = {}
        self.converted: list[PendingApp] = []

    def table(self) -> dict[str, Handler]:
        return {"apps/create-from-manifest": self.create_from_manifest}

    def register(
        self,
        manifest: dict[str, Any],
        *,
        pem: str,
        owner: str = "octo",
        webhook_secret: str | None = "whsec-from-fake",
        code: str | None = None,
    ) -> str:
        """GitHub's form accepting `manifest`: the one-time code it redirects with."""
        for key in ("url", "hook_attributes"):
            if key not in manifest:
                raise ValueError(f"GitHub refuses a manifest without {key!r}")
        if not str(manifest["hook_attributes"].get("url", "")).startswith(("http://", "https://")):
            raise ValueError("GitHub refuses a manifest without hook_attributes.url")
        slug = str(manifest.get("name") or "app").lower().replace(" ", "-")
        code = code or secrets.token_hex(10)
        self.pending[code] = PendingApp(
            id=self.fake._new_id(),
            slug=slug,
            manifest=manifest,
            pem=pem,
            webhook_secret=webhook_secret,
            client_secret=secrets.token_hex(20),
            owner=owner,
        )
        return code

    async def create_from_manifest(self, incoming: Incoming) -> Reply:
        pending = self.pending.pop(incoming.params["code"], None)
        if pending is None:
            raise FakeGitHubError(404, "Not Found")
        self.converted.append(pending)
        return Reply(201, self._app_json(pending))

    def _app_json(self, pending: PendingApp) -> dict[str, Any]:
        body: dict[str, Any] = oa.example("integration-from-manifest")
        manifest = pending.manifest
        body.update(
            id=pending.id,
            slug=pending.slug,
            node_id=f"A_{pending.id}",
            name=manifest.get("name") or pending.slug,
            description=manifest.get("description") or "",
            external_url=manifest["url"],
            html_url=f"{self.fake.origin}/apps/{pending.slug}",
            owner=self.shapes.user(pending.owner),
            permissions=dict(manifest.get("default_permissions") or {}),
            events=list(manifest.get("default_events") or []),
            client_id=f"Iv1.{pending.id}",
            client_secret=pending.client_secret,
            webhook_secret=pending.webhook_secret,
            pem=pending.pem,
        )
        return body
