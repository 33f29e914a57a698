"""README.md tells a newcomer the truth on its first screen and in its tables.

* The first screen (everything before the first `---`) names the Python it needs as
  pyproject.toml does, makes a virtual environment, keeps the two commands that install and
  start the server, and links the guides a newcomer needs next.
* The test command is the one CI runs (`.ci/run` says it runs the README's).
* The endpoint table lists exactly the routes the app registers (configured with the
  dashboard on, and in setup mode); the event table exactly the events the routers handle.
* Every relative link of the README and of the pages this change wrote resolves, anchors
  included (GitHub's heading slugs).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.app import create_app
from bot.judge.settings import JudgeSettings
from bot.routing import build_router
from bot.settings import Settings
from tests.support.app_helpers import make_settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_METHOD_PATH = re.compile(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`\s]*)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
NEXT_GUIDES = (
    "docs/deploy.md",
    "docs/operations.md",
    "docs/dashboard.md",
    "docs/merge-queue.md",
    "docs/tagging.md",
    "docs/models.md",
    "CHANGELOG.md",
)


def readme() -> str:
    return README.read_text(encoding="utf-8")


def first_screen() -> str:
    return readme().split("\n---\n", 1)[0]


def code_blocks(text: str) -> list[list[str]]:
    return [body.strip().splitlines() for body in re.findall(r"```sh\n(.*?)```", text, re.DOTALL)]


def section_rows(title: str) -> list[str]:
    text = readme()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return [line for line in text[start:end].splitlines() if line.startswith("| ")]


# -- the first screen ---------------------------------------------------------------------


def test_first_screen_names_the_python_that_pyproject_requires() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    minimum = re.fullmatch(r">=(\d+\.\d+)", project["requires-python"])
    assert minimum is not None
    assert f"Python {minimum[1]} or later" in first_screen()


def test_first_screen_installs_in_a_venv_with_the_two_commands() -> None:
    install = code_blocks(first_screen())[0]
    commands = [line.split("#")[0].strip() for line in install]
    assert commands[0].startswith("python3 -m venv .venv && . .venv/bin/activate")
    assert commands[1:] == ["pip install -e .", "judge-bot serve"]


def test_first_screen_links_the_guides_a_newcomer_needs() -> None:
    links = set(_LINK.findall(first_screen()))
    assert set(NEXT_GUIDES) <= links, set(NEXT_GUIDES) - links


def test_the_test_command_is_the_one_ci_runs() -> None:
    blocks = code_blocks(first_screen())
    assert ["pytest --cov"] in blocks
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line.strip() for line in ci if line.strip() and not line.startswith("#")]
    assert commands[-1] == "pytest --cov"


# -- the endpoint table --------------------------------------------------------------------


def documented_endpoints() -> set[tuple[str, str]]:
    rows = section_rows("Endpoints")
    return {pair for row in rows for pair in _METHOD_PATH.findall(row.split(" | ")[0])}


def registered(app: web.Application) -> set[tuple[str, str]]:
    return {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.method != "HEAD" and route.resource is not None
    }


def test_the_endpoint_table_lists_every_route(tmp_path: Path, github_keypair: Any) -> None:
    judges = JudgeSettings()
    configured = make_settings(github_keypair.private_pem, tmp_path, DASHBOARD_TOKEN="t" * 32)
    setup = Settings(_env_file=None, DATABASE_URL=f"sqlite:///{tmp_path / 'setup.sqlite3'}")
    routes = set()
    for settings in (configured, setup):
        routes |= registered(create_app(settings, judge_settings=judges, start_workers=False))
    assert documented_endpoints() == routes


# -- the event table ----------------------------------------------------------------------


def routed_events() -> set[str]:
    router = build_router()
    return set(router._shallow_routes) | set(router._deep_routes)


def documented_events() -> set[str]:
    rows = section_rows("What it does")
    events = set()
    for row in rows[2:]:
        first = row.split(" | ")[0]
        events.update(re.findall(r"`([a-z_]+)`", first))
    return events


def test_the_event_table_lists_every_event_the_routers_handle() -> None:
    assert documented_events() == routed_events()


# -- links --------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}


PAGES = [
    README,
    ROOT / "CHANGELOG.md",
    ROOT / "docs" / "models.md",
    *sorted((ROOT / "docs" / "events").glob("*.md")),
]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    for target in _LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        assert resolved.exists(), f"{page.name}: {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.name}: {target}"


def test_slugs_follow_github() -> None:
    assert slug("GitHub's own merge queue (`merge_group`)") == "githubs-own-merge-queue-merge_group"
    assert slug("The gate's guarantee") == "the-gates-guarantee"
    assert slug("`app.yml`") == "appyml"
