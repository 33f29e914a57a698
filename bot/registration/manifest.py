"""`app.yml`, a GitHub App manifest: read, checked, and completed with this server's addresses.

GitHub documents every key (docs.github.com, "Registering a GitHub App from a manifest").
Unknown keys are refused, so a misspelt `default_permission` cannot silently register an
App without its permissions. Any permission GitHub names (lowercase words joined by `_`)
at `read`, `write` or `admin`, and any event name, is accepted: features add their own.

The addresses in the file (`hook_attributes.url`, `redirect_url`, `setup_url`) are
placeholders: GitHub must reach *this* server, so `to_send` replaces them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from bot.registration.addresses import Addresses

__all__ = [
    "MANIFEST_FILE",
    "AppManifest",
    "ManifestError",
    "find_manifest",
    "load_manifest",
    "parse_manifest",
]

MANIFEST_FILE = "app.yml"
# Far above any real manifest; a bigger file is not one.
MAX_MANIFEST_BYTES = 64 * 1024
# GitHub refuses longer App names.
MAX_NAME_LENGTH = 34

_IDENTIFIER = r"^[a-z][a-z0-9_]*$"
_HTTP_URL = r"^https?://\S+$"
Identifier = Annotated[str, StringConstraints(pattern=_IDENTIFIER, max_length=100)]
HttpUrl = Annotated[str, StringConstraints(pattern=_HTTP_URL, max_length=2000)]
# Pydantic's "should match pattern '...'" in words.
_PATTERN_MEANS = {
    _IDENTIFIER: "must be a lowercase name GitHub uses (letters, digits and _)",
    _HTTP_URL: "must be an http(s) URL",
}
Level = Literal["read", "write", "admin"]


class ManifestError(Exception):
    """app.yml is missing or not a manifest GitHub would accept; the message says where."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HookAttributes(_Strict):
    url: HttpUrl | None = None
    active: bool = True


class AppManifest(_Strict):
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_LENGTH)]
    url: HttpUrl
    description: str | None = None
    hook_attributes: HookAttributes = HookAttributes()
    redirect_url: HttpUrl | None = None
    callback_urls: Annotated[list[HttpUrl], Field(max_length=10)] = []
    setup_url: HttpUrl | None = None
    public: bool = False
    default_permissions: dict[Identifier, Level] = {}
    default_events: list[Identifier] = []
    request_oauth_on_install: bool = False
    setup_on_update: bool = False

    def to_send(self, addresses: Addresses) -> dict[str, Any]:
        """The manifest GitHub receives: this file's values with this server's addresses."""
        sent = self.model_dump(exclude_defaults=True, exclude={"hook_attributes", "setup_url"})
        sent.update(
            hook_attributes={"url": addresses.hook_url, "active": self.hook_attributes.active},
            redirect_url=addresses.redirect_url,
            setup_url=addresses.setup_url,
            public=self.public,
            default_permissions=dict(self.default_permissions),
            default_events=list(dict.fromkeys(self.default_events)),
        )
        return sent


def parse_manifest(text: str, source: str = MANIFEST_FILE) -> AppManifest:
    """The manifest in `text`; `ManifestError` naming `source` and the key at fault."""
    if len(text.encode("utf-8")) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{source}: larger than {MAX_MANIFEST_BYTES // 1024} KiB")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ManifestError(f"{source}: not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{source}: must be a mapping of manifest keys (name, url, ...)")
    try:
        return AppManifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(f"{source}: {_describe(exc)}") from None


def _describe(exc: ValidationError) -> str:
    problems: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]).replace(".[key]", " (the name)")
        if error["type"] == "extra_forbidden":
            message = "not a manifest key"
        else:
            pattern = (error.get("ctx") or {}).get("pattern")
            message = _PATTERN_MEANS.get(str(pattern), error["msg"])
        problems.append(f"{where}: {message}")
    return "; ".join(problems)


# The judge-bot checkout this code runs from (`pip install -e .`); an installed package
# has no app.yml there.
CHECKOUT = Path(__file__).resolve().parents[2]


def find_manifest(cwd: Path | None = None, checkout: Path = CHECKOUT) -> Path | None:
    """`app.yml` in the working directory (as Probot looks for it), else the one in the
    judge-bot checkout; None when neither exists."""
    for folder in (cwd or Path.cwd(), checkout):
        candidate = folder / MANIFEST_FILE
        if candidate.is_file():
            return candidate
    return None


def load_manifest(path: Path | None) -> AppManifest:
    """The manifest at `path` (from `find_manifest`); `ManifestError` when there is none."""
    if path is None:
        raise ManifestError(
            f"{MANIFEST_FILE} not found: start judge-bot in the directory that holds it "
            "(the judge-bot checkout)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ManifestError(f"{path}: cannot be read ({reason})") from None
    return parse_manifest(text, str(path))
