"""Every `.github/judge.yml` example in the docs is a file the bot accepts, models included.

Which blocks are examples: fenced blocks whose info string is `yaml` (or `yml`) in
`docs/*.md` and `docs/events/*.md`, all of them in docs/repo-config.md (the page about the
file) and, on any other page, those with a line that starts with one of the file's top-level
keys (`mode:`, `paths:`, `models:`, ...). A compose file or a workflow is left alone. To show
a file that is *meant* to be refused, use a `text` block, as the Errors section does.

Accepted means what the server does with the file: `parse_repo_config` reads it, and its
`models:` become the judge settings `engine_for` builds (`model_overrides` over the
installation's), which refuses two tiers of one model family. The installation's own models
are picked from families the example does not use, so only the example can be at fault.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.judge.authorship import family_of_model
from bot.judge.settings import JudgeSettings
from bot.judging.config_file import RepoConfigError, parse_repo_config
from bot.judging.flow import model_overrides
from bot.judging.repo_config import RepoConfig

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REPO_CONFIG_DOC = DOCS / "repo-config.md"
TOP_LEVEL_KEYS = tuple(RepoConfig.model_fields)

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")
_KEY_LINE = re.compile(rf"^(?:{'|'.join(map(re.escape, TOP_LEVEL_KEYS))})\s*:")

# Installation models, one per family; each check takes three of families the example lacks.
_INSTALLATION_MODELS = (
    "mistral-large-latest",
    "gemini-2.5-pro",
    "llama-3.3-70b-instruct",
    "qwen3-coder",
    "deepseek-chat",
    "grok-4",
)
_LLM_BASE_URL = "http://llm.invalid/v1"


@dataclass(frozen=True)
class Example:
    """One fenced YAML block: where it starts (the opening fence's line) and its text."""

    path: Path
    line: int
    text: str

    def __str__(self) -> str:
        try:
            where = self.path.relative_to(ROOT)
        except ValueError:
            where = self.path
        return f"{where}:{self.line}"


def yaml_blocks(path: Path, text: str) -> Iterator[Example]:
    """The fenced `yaml`/`yml` blocks of a Markdown text, in order."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if opening is None:
            continue
        fence = opening["fence"]
        start = index
        while index < len(lines) and not _closes(lines[index], fence):
            index += 1
        if opening["info"].lower() in {"yaml", "yml"}:
            body = lines[start:index]
            yield Example(path, start, "\n".join(body) + "\n" if body else "")
        index += 1  # past the closing fence


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


def config_examples(path: Path, text: str) -> list[Example]:
    """The blocks of one page that are `.github/judge.yml` examples (module docstring)."""
    every = path.resolve() == REPO_CONFIG_DOC.resolve()
    return [
        block
        for block in yaml_blocks(path, text)
        if every or any(_KEY_LINE.match(line) for line in block.text.splitlines())
    ]


def documented_examples() -> list[Example]:
    pages = sorted(DOCS.glob("*.md")) + sorted((DOCS / "events").glob("*.md"))
    found: list[Example] = []
    for page in pages:
        found += config_examples(page, page.read_text(encoding="utf-8"))
    return found


def installation_settings(avoid: set[str]) -> JudgeSettings:
    """An installation with three tiers of three families, none of them in `avoid`."""
    chosen: list[str] = []
    families = set(avoid)
    for model in _INSTALLATION_MODELS:
        family = family_of_model(model)
        if family not in families:
            chosen.append(model)
            families.add(family)
    quick, deep, tiebreaker = chosen[:3]
    return JudgeSettings(
        llm_base_url=_LLM_BASE_URL,
        quick_model=quick,
        deep_model=deep,
        tiebreaker_model=tiebreaker,
    )


def four_eyes_problem(config: RepoConfig) -> str | None:
    """Why the server would refuse these `models:` (None: it would not), built exactly as
    `bot.judging.flow.engine_for` builds a repository's judge settings."""
    overrides = model_overrides(config)
    if not overrides:
        return None
    tier_models: Sequence[str] = [
        model for tier, model in overrides.items() if tier.endswith("_model") and model
    ]
    installation = installation_settings({family_of_model(model) for model in tier_models})
    try:
        JudgeSettings(**{**installation.model_dump(), **overrides})
    except ValidationError as exc:
        return str(exc.errors()[0].get("msg", "invalid models")).removeprefix("Value error, ")
    return None


EXAMPLES = documented_examples()


@pytest.fixture(autouse=True)
def _no_judge_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """JudgeSettings reads JUDGE_* variables: the machine's must not decide these tests."""
    for name in list(os.environ):
        if name.startswith("JUDGE_"):
            monkeypatch.delenv(name)


def test_the_repo_config_page_has_examples_and_they_are_found() -> None:
    on_page = [e for e in EXAMPLES if e.path == REPO_CONFIG_DOC]
    assert len(on_page) >= 2
    assert any("models:" in e.text for e in on_page), "the full example shows models:"


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_example_is_a_valid_file(example: Example) -> None:
    try:
        parse_repo_config(example.text)
    except RepoConfigError as exc:
        pytest.fail(f"{example}: {exc}")


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_example_models_pass_the_four_eyes_check(example: Example) -> None:
    problem = four_eyes_problem(parse_repo_config(example.text))
    assert problem is None, f"{example}: models: refused: {problem}"


# -- the checks themselves -----------------------------------------------------------------

BAD_PANEL = """\
models:
  quick: opencode/gpt-5-nano
  deep: opencode/kimi-k2.5-free
  tiebreaker: opencode/gpt-5.1-codex-mini
"""


def test_two_tiers_of_one_family_are_refused() -> None:
    """The panel the docs once showed: quick and tiebreaker are both OpenAI."""
    problem = four_eyes_problem(parse_repo_config(BAD_PANEL))
    assert problem is not None
    assert "'openai'" in problem
    assert "quick and tiebreaker" in problem


@pytest.mark.parametrize(
    "text",
    [
        "",
        "mode: blocking\n",
        "models:\n  deep: claude-sonnet-4-5\n",
        "models:\n  quick: gpt-5-nano\n  deep: claude-sonnet-4-5\n  tiebreaker: kimi-k2\n",
    ],
)
def test_panels_of_distinct_families_pass(text: str) -> None:
    assert four_eyes_problem(parse_repo_config(text)) is None


def test_installation_never_shares_a_family_with_the_example() -> None:
    installation = installation_settings({"mistral", "google", "openai"})
    families = {seat.family for seat in installation.tiers().values()}
    assert len(families) == 3
    assert not families & {"mistral", "google", "openai"}


def test_which_blocks_count_as_config_examples(tmp_path: Path) -> None:
    page = tmp_path / "guide.md"
    text = (
        "Config:\n\n```yaml\nmodels:\n  deep: claude-sonnet-4-5\n```\n\n"
        "Compose:\n\n```yaml\nservices:\n  app:\n    image: judge-bot\n```\n\n"
        "Refused on purpose:\n\n```text\nmode: sometimes\n```\n\n"
        "Longer fence:\n\n````yml\nmode: advisory\n```\nstill inside\n````\n"
    )
    found = config_examples(page, text)
    assert [(e.line, e.text) for e in found] == [
        (3, "models:\n  deep: claude-sonnet-4-5\n"),
        (24, "mode: advisory\n```\nstill inside\n"),
    ]
    # On the repo-config page every YAML block is an example, whatever its keys.
    every = config_examples(REPO_CONFIG_DOC, "```yaml\n{}\n```\n")
    assert [e.text for e in every] == ["{}\n"]
