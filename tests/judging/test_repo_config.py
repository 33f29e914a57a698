"""`.github/judge.yml`: defaults, the pure decisions (watched, rubric, sensitive, authors,
selection), and the JSON Schema and docs kept in step with the parser. Parsing and its
line-accurate errors are tested in test_config_file.py, glob semantics in tests/test_globs.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from bot.github.types import ChangedPath
from bot.judge.records import RubricName
from bot.judge.settings import Mode
from bot.judging.config_file import parse_repo_config
from bot.judging.repo_config import (
    DEFAULT_INCLUDE,
    EXCLUDED,
    NOT_WATCHED,
    REMOVED,
    LeftOut,
    RepoConfig,
    author_matches,
    config_json_schema,
    effective_mode,
    is_sensitive,
    render_schema,
    rubric_for,
    select_files,
)
from tests.judging.test_config_file import ERROR_CASES, FULL

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "judge-config.schema.json"
DOC_FILE = ROOT / "docs" / "repo-config.md"

# ---------------------------------------------------------------------------
# Defaults


def test_defaults() -> None:
    """The defaults match the seeds: Markdown under the watched directories, advisory."""
    c = RepoConfig()
    assert c.mode is None
    assert c.paths.include == DEFAULT_INCLUDE
    assert c.paths.include == (
        "research/**/*.md",
        "knowledge/**/*.md",
        "docs/**/*.md",
        "plans/**/*.md",
    )
    assert c.paths.extra_include == ()
    assert c.paths.exclude == ()
    assert c.rubrics == {"**/*.md": RubricName.CONTENT}
    assert c.sensitive == ()
    assert c.authors == ()
    assert c.skip_label == "judge-skip"
    assert c.limits.max_files == 50
    assert c.limits.max_chars_per_file == 100_000
    assert (c.models.quick, c.models.deep, c.models.tiebreaker) == (None, None, None)
    assert c.task.directives == ()
    assert c.task.acceptance == ""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("research/signal.md", True),
        ("research/2026/02/signal.md", True),
        ("knowledge/a.md", True),
        ("docs/guide.md", True),
        ("plans/q3.md", True),
        ("README.md", False),
        ("research/data.csv", False),
        ("src/research/a.md", False),
        ("nimbalyst-local/plans/a.md", False),
    ],
)
def test_default_watched_paths(path: str, expected: bool) -> None:
    assert watched(RepoConfig(), path) is expected


def test_effective_mode() -> None:
    """An unset mode falls back to the installation default, itself advisory."""
    assert effective_mode(RepoConfig()) == "advisory"
    assert effective_mode(RepoConfig(), Mode.BLOCKING) is Mode.BLOCKING
    assert effective_mode(parse_repo_config("mode: advisory"), Mode.BLOCKING) is Mode.ADVISORY
    assert effective_mode(parse_repo_config("mode: blocking"), Mode.ADVISORY) is Mode.BLOCKING
    assert effective_mode(parse_repo_config("mode:"), Mode.BLOCKING) is Mode.BLOCKING


def test_without_a_config_the_installation_default_counts() -> None:
    assert effective_mode(None, Mode.BLOCKING) is Mode.BLOCKING
    assert effective_mode(None) is Mode.ADVISORY


def test_defaults_are_not_shared_mutable_state() -> None:
    """Two parsed configs never share a mutable default through which one could change the other."""
    a = parse_repo_config("")
    b = parse_repo_config("")
    with pytest.raises(AttributeError):
        a.paths.include.append("x")  # type: ignore[attr-defined]
    assert a == b


# ---------------------------------------------------------------------------
# Watched and sensitive files (FULL is the full example file of test_config_file)


def test_include_replaces_and_extra_include_adds() -> None:
    """`include` replaces the default list; `extra_include` keeps it and adds."""
    replaced = parse_repo_config("paths:\n  include: ['notes/*.md']\n")
    assert not watched(replaced, "research/a.md")
    assert watched(replaced, "notes/a.md")
    added = parse_repo_config("paths:\n  extra_include: ['notes/*.md']\n")
    assert watched(added, "research/a.md")
    assert watched(added, "notes/a.md")


def test_exclude_wins_over_include_and_sensitive() -> None:
    c = parse_repo_config(FULL)
    assert watched(c, "notes/a.md")
    assert not watched(c, "notes/drafts/a.md")
    assert watched(c, "README.md")
    assert not watched(c, "docs/a.md")
    # sensitive files are judged even when no include glob lists them
    assert watched(c, "pkg/SECURITY.md")
    c2 = parse_repo_config("sensitive: ['secret/**']\npaths:\n  exclude: ['secret/old/**']\n")
    assert watched(c2, "secret/a.txt")
    assert not watched(c2, "secret/old/a.txt")
    assert is_sensitive(c2, "secret/old/a.txt")


def test_is_sensitive() -> None:
    c = parse_repo_config(FULL)
    assert is_sensitive(c, "notes/security/keys.md")
    assert is_sensitive(c, "SECURITY.md")
    assert is_sensitive(c, "sub/dir/SECURITY.md")
    assert not is_sensitive(c, "notes/a.md")
    assert not is_sensitive(RepoConfig(), "research/a.md")


# ---------------------------------------------------------------------------
# Rubrics


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ("", "docs/a.md", RubricName.CONTENT),
        ("", "src/a.py", RubricName.CONTENT),
        (FULL, "src/pkg/a.py", RubricName.CODE),
        (FULL, "tasks/t1/result.md", RubricName.COMPLETION),
        (FULL, "notes/a.md", RubricName.CONTENT),
        # the first glob that matches wins, even when a later one is more specific
        ("rubrics:\n  '**': code\n  'docs/*.md': content\n", "docs/a.md", RubricName.CODE),
        ("rubrics:\n  'docs/*.md': content\n  '**': code\n", "docs/a.md", RubricName.CONTENT),
        ("rubrics:\n  'docs/*.md': content\n  '**': code\n", "src/a.c", RubricName.CODE),
        # no glob matches: content
        ("rubrics:\n  '*.py': code\n", "docs/a.md", RubricName.CONTENT),
        ("rubrics: {}\n", "src/a.py", RubricName.CONTENT),
        ("rubrics:\n  '*.py': code\n", "deep/in/tree/a.py", RubricName.CODE),
    ],
)
def test_rubric_for(text: str, path: str, expected: RubricName) -> None:
    assert rubric_for(parse_repo_config(text), path) is expected


def test_rubric_order_follows_the_file() -> None:
    """The mapping keeps the file's order, whatever the keys sort to."""
    c = parse_repo_config("rubrics:\n  z/**: code\n  a/**: completion\n  m/**: content\n")
    assert list(c.rubrics) == ["z/**", "a/**", "m/**"]


# ---------------------------------------------------------------------------
# Authors


@pytest.mark.parametrize(
    ("authors", "names", "expected"),
    [
        ([], [], True),
        ([], ["anyone"], True),
        (["OpenClaw Agent"], ["openclaw agent"], True),
        (["OpenClaw Agent"], ["OPENCLAW AGENT"], True),
        (["OpenClaw Agent"], ["OpenClaw"], False),
        (["OpenClaw Agent"], [], False),
        (["octocat"], ["Someone Else", "octocat"], True),
        (["@octocat"], ["octocat"], True),
        (["octocat"], ["@OctoCat"], True),
        (["agent[bot]"], ["agent"], False),
        (["agent[bot]"], ["Agent[bot]"], True),
        (["a@example.com"], ["A@Example.com"], True),
        (["a", "b"], ["c", "B"], True),
        ([" spaced "], ["spaced"], True),
    ],
)
def test_author_matches(authors: list[str], names: list[str], expected: bool) -> None:
    config = RepoConfig.model_validate({"authors": authors})
    assert author_matches(config, names) is expected


def test_author_matches_accepts_any_iterable() -> None:
    config = parse_repo_config("authors: [bot]\n")

    def gen() -> Iterator[str]:
        yield "human"
        yield "BOT"

    assert author_matches(config, gen())


# ---------------------------------------------------------------------------
# Selection


def files(*paths: str, status: str = "modified") -> list[ChangedPath]:
    return [ChangedPath(p, status) for p in paths]


def watched(config: RepoConfig, path: str) -> bool:
    """Whether the selection would judge `path` (a modified file, within the limits)."""
    return [f.path for f in select_files(config, files(path)).files] == [path]


def test_select_keeps_watched_existing_files_in_order() -> None:
    changed = [
        ChangedPath("research/b.md", "modified"),
        ChangedPath("src/app.py", "modified"),
        ChangedPath("research/gone.md", "removed"),
        ChangedPath("docs/a.md", "added"),
        ChangedPath("docs/new.md", "renamed", previous_path="docs/old.md"),
    ]
    sel = select_files(RepoConfig(), changed)
    assert [f.path for f in sel.files] == ["research/b.md", "docs/a.md", "docs/new.md"]
    assert sel.left_out == (
        LeftOut("src/app.py", "not in the watched paths"),
        LeftOut("research/gone.md", "removed"),
    )
    assert (NOT_WATCHED, REMOVED) == ("not in the watched paths", "removed")


def test_select_reports_excluded_files() -> None:
    config = parse_repo_config("paths:\n  exclude: ['docs/drafts/']\n")
    sel = select_files(config, files("docs/a.md", "docs/drafts/x.md"))
    assert [f.path for f in sel.files] == ["docs/a.md"]
    assert sel.left_out == (LeftOut("docs/drafts/x.md", "excluded by paths.exclude"),)
    assert EXCLUDED == "excluded by paths.exclude"


def test_select_keeps_every_watched_file_whatever_max_files_says() -> None:
    """A watched file left out would be a change nobody judged: max_files now sizes the
    judge requests (tests/judging/test_windows.py), it never drops a file."""
    config = parse_repo_config("limits:\n  max_files: 1\nsensitive: ['docs/sec/**']\n")
    sel = select_files(config, files("docs/a.md", "docs/b.md", "docs/sec/c.md", "docs/d.md"))
    assert [f.path for f in sel.files] == ["docs/a.md", "docs/b.md", "docs/sec/c.md", "docs/d.md"]
    assert sel.left_out == ()
    assert sel.max_files == 1
    assert sel.sensitive == frozenset({"docs/sec/c.md"})


def test_select_nothing() -> None:
    sel = select_files(RepoConfig(), [])
    assert (sel.files, sel.left_out, sel.sensitive) == ((), (), frozenset())


def test_select_last_entry_of_a_repeated_path_counts() -> None:
    """Concatenated per-commit lists: a file added then removed is removed."""
    changed = [ChangedPath("docs/a.md", "added"), ChangedPath("docs/a.md", "removed")]
    sel = select_files(RepoConfig(), changed)
    assert sel.files == ()
    assert sel.left_out == (LeftOut("docs/a.md", "removed"),)
    changed = [ChangedPath("docs/a.md", "removed"), ChangedPath("docs/a.md", "added")]
    assert [f.status for f in select_files(RepoConfig(), changed).files] == ["added"]


# ---------------------------------------------------------------------------
# JSON Schema and docs


def test_schema_has_dialect_title_and_descriptions_everywhere() -> None:
    schema = config_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"]
    assert schema["description"]
    jsonschema.Draft202012Validator.check_schema(schema)

    def objects(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            if "properties" in node:
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    seen = 0
    for obj in objects(schema):
        assert obj.get("additionalProperties") is False
        for name, prop in obj["properties"].items():
            assert prop.get("description"), f"{name} has no description"
            seen += 1
    assert seen >= 19
    assert schema["$defs"]["RubricName"]["description"].startswith("Rubric a file")


def test_docs_schema_file_is_current() -> None:
    """docs/judge-config.schema.json is regenerated with `python -m bot.judging.repo_config`."""
    out = subprocess.run(
        [sys.executable, "-m", "bot.judging.repo_config"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == render_schema()
    assert SCHEMA_FILE.read_text(encoding="utf-8") == out, (
        "run: python -m bot.judging.repo_config > docs/judge-config.schema.json"
    )


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


# Refusals the schema cannot express: duplicate keys (gone once parsed), glob
# syntax, and strings that are blank only after stripping.
PARSER_ONLY = {
    "include bad glob",
    "rubric bad glob key",
    "sensitive unclosed class",
    "authors blank",
    "models tiebreaker blank",
    "duplicate key",
    "duplicate nested key",
}


def test_schema_accepts_valid_files_and_refuses_what_the_parser_refuses() -> None:
    """Editors using the schema flag the same mistakes the bot reports."""
    validator = _validator()
    validator.validate(yaml.safe_load(FULL))
    validator.validate({})
    checked = 0
    for name, text, *_ in ERROR_CASES:
        if name in PARSER_ONLY:
            continue
        assert list(validator.iter_errors(yaml.safe_load(text))), name
        checked += 1
    assert checked == len(ERROR_CASES) - len(PARSER_ONLY)


def _doc_yaml_blocks() -> list[str]:
    doc = DOC_FILE.read_text(encoding="utf-8")
    return re.findall(r"```yaml\n(.*?)```", doc, flags=re.DOTALL)


def test_docs_examples_parse_and_validate() -> None:
    """Every YAML example in docs/repo-config.md is a valid file."""
    blocks = _doc_yaml_blocks()
    assert len(blocks) >= 2
    validator = _validator()
    for block in blocks:
        parse_repo_config(block)
        validator.validate(yaml.safe_load(block) or {})


def test_docs_mention_every_key_and_default() -> None:
    """The key table lists every setting, nested ones by their dotted name."""
    doc = DOC_FILE.read_text(encoding="utf-8")
    schema = config_json_schema()
    keys: list[str] = []
    for name, prop in schema["properties"].items():
        ref = prop.get("$ref", "")
        section = schema["$defs"][ref.rsplit("/", 1)[-1]] if ref else {}
        if "properties" in section:
            keys += [f"{name}.{sub}" for sub in section["properties"]]
        else:
            keys.append(name)  # a plain value, or a mapping of the user's own names (tags)
    assert len(keys) == 34
    for key in keys:
        assert f"| `{key}` |" in doc, key
    for glob in DEFAULT_INCLUDE:
        assert glob in doc
    assert "judge-skip" in doc
    assert "yaml-language-server: $schema=" in doc
