"""The permissions and events the docs tell people to give the App are the ones in `app.yml`.

People read them in two places: docs/registration.md (what the one-click registration
asks for) and docs/deploy.md (what to copy by hand on GitHub Enterprise Server). Either
going stale registers an App that cannot merge, or misses the events a feature waits for.

How a page lists them: a permission is a code span `name: level` (`contents: write`); the
listing is every block of the page (lines between blank lines: a paragraph, a list, a
table) that holds one; an event is a code span in the listing that GitHub names as an
event an App can subscribe to (the `events` enum of GitHub's App schema, in the webhook
fixtures).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
APP_SCHEMA = (
    ROOT / "tests" / "fixtures" / "github" / "webhook-schemas" / "common" / "app.schema.json"
)
DOCS = (ROOT / "docs" / "registration.md", ROOT / "docs" / "deploy.md")

_SPAN = re.compile(r"`([^`\n]+)`")
_PERMISSION = re.compile(r"([a-z_]+): (read|write|admin)")


@dataclass(frozen=True)
class Listing:
    permissions: dict[str, str]
    events: frozenset[str]


def subscribable_events() -> frozenset[str]:
    schema = json.loads(APP_SCHEMA.read_text(encoding="utf-8"))
    return frozenset(schema["properties"]["events"]["items"]["enum"])


def manifest_listing() -> Listing:
    manifest = yaml.safe_load((ROOT / "app.yml").read_text(encoding="utf-8"))
    permissions = {str(k): str(v) for k, v in manifest["default_permissions"].items()}
    return Listing(permissions, frozenset(str(e) for e in manifest["default_events"]))


def blocks(text: str) -> list[str]:
    return [block for block in re.split(r"\n\s*\n", text) if block.strip()]


def doc_listing(text: str, vocabulary: frozenset[str]) -> Listing:
    """What one page lists (module docstring); a permission named twice must agree."""
    permissions: dict[str, str] = {}
    events: set[str] = set()
    for block in blocks(text):
        spans = _SPAN.findall(block)
        granted = [m for span in spans if (m := _PERMISSION.fullmatch(span))]
        if not granted:
            continue
        for match in granted:
            name, level = match.groups()
            assert permissions.setdefault(name, level) == level, f"{name}: two levels"
        events.update(span for span in spans if span in vocabulary)
    return Listing(permissions, frozenset(events))


@pytest.mark.parametrize(
    "page",
    [
        DOCS[0],
        DOCS[1],
    ],
    ids=lambda page: page.name,
)
def test_page_lists_the_manifests_permissions_and_events(page: Path) -> None:
    listed = doc_listing(page.read_text(encoding="utf-8"), subscribable_events())
    expected = manifest_listing()
    assert listed.permissions == expected.permissions
    assert listed.events == expected.events


def test_the_manifest_asks_only_for_what_github_names() -> None:
    expected = manifest_listing()
    assert expected.events <= subscribable_events()
    assert expected.permissions, "app.yml asks for permissions"


def test_the_reading_sees_a_stale_list() -> None:
    vocabulary = subscribable_events()
    text = (
        "Setup mode needs `APP_ID` unset.\n\n"
        "| permission | why |\n| --- | --- |\n| `contents: read` | files |\n"
        "| `checks: write` | runs |\n| event `push` | judge pushes |\n\n"
        "An unrelated `status` word in another paragraph does not count.\n"
    )
    listed = doc_listing(text, vocabulary)
    assert listed == Listing({"contents": "read", "checks": "write"}, frozenset({"push"}))
    assert listed != manifest_listing(), "a stale list differs from app.yml"
    with pytest.raises(AssertionError, match="contents: two levels"):
        doc_listing("`contents: read` and `contents: write`\n", vocabulary)
