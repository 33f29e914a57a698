"""Parsing `.github/judge.yml`: an empty file means the defaults, a full file sets
every key, and every mistake is reported with the line and key at fault.

FULL and ERROR_CASES are also used by test_repo_config.py, whose schema tests check
that editors using the JSON Schema flag the same mistakes the parser reports."""

from __future__ import annotations

import threading

import pytest

from bot.judge.records import RubricName
from bot.judging.config_file import ConfigIssue, RepoConfigError, parse_repo_config
from bot.judging.repo_config import RepoConfig

# ---------------------------------------------------------------------------
# Empty and full files


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "{}", "---\n", "--- {}\n"])
def test_empty_file_gives_defaults(text: str) -> None:
    """An empty file, comments only or an empty mapping mean every default."""
    assert parse_repo_config(text) == RepoConfig()


FULL = """\
# yaml-language-server: $schema=../docs/judge-config.schema.json
mode: blocking
paths:
  include:
    - "notes/**/*.md"
  extra_include: ["README.md"]
  exclude:
    - "notes/drafts/**"
rubrics:
  "src/**/*.py": code
  "tasks/**": completion
  "**": content
sensitive:
  - "notes/security/**"
  - SECURITY.md
authors: ["OpenClaw Agent", "@Agent-Bot[bot]", "agent@example.com"]
skip_label: no-judge
limits:
  max_files: 3
  max_chars_per_file: 5000
models:
  quick: opencode/gpt-5-nano
  deep: opencode/kimi-k2.5-free
task:
  directives:
    - Every claim cites a source.
  acceptance: Links resolve.
"""


def test_full_file() -> None:
    c = parse_repo_config(FULL)
    assert c.mode == "blocking"
    assert c.paths.include == ("notes/**/*.md",)
    assert c.paths.extra_include == ("README.md",)
    assert c.paths.exclude == ("notes/drafts/**",)
    assert list(c.rubrics.items()) == [
        ("src/**/*.py", RubricName.CODE),
        ("tasks/**", RubricName.COMPLETION),
        ("**", RubricName.CONTENT),
    ]
    assert c.sensitive == ("notes/security/**", "SECURITY.md")
    assert c.authors == ("OpenClaw Agent", "Agent-Bot[bot]", "agent@example.com")
    assert c.skip_label == "no-judge"
    assert (c.limits.max_files, c.limits.max_chars_per_file) == (3, 5000)
    assert c.models.quick == "opencode/gpt-5-nano"
    assert c.models.deep == "opencode/kimi-k2.5-free"
    assert c.models.tiebreaker is None
    assert c.task.directives == ("Every claim cites a source.",)
    assert c.task.acceptance == "Links resolve."


# ---------------------------------------------------------------------------
# Errors: every key, with the line it is on

ERROR_CASES: list[tuple[str, str, int, str | None, str]] = [
    # (name, text, line, key, fragment of the message)
    (
        "mode value",
        "# judge settings\n\nmode: block\n",
        3,
        "mode",
        "expected one of 'advisory' or 'blocking', got the string \"block\"",
    ),
    (
        "mode type",
        "paths: {}\nmode: [advisory]\n",
        2,
        "mode",
        "got a list",
    ),
    (
        "paths not a mapping",
        "mode: advisory\npaths:\n  - docs/**\n",
        3,
        "paths",
        "expected a mapping (key: value lines), got a list",
    ),
    (
        "paths unknown key",
        "paths:\n  include: ['a/**']\n  inclde: ['b/**']\n",
        3,
        "paths.inclde",
        'unknown key "inclde" (did you mean include?)',
    ),
    (
        "include item type",
        "paths:\n  include:\n    - a/*.md\n    - b/*.md\n    - {x: 1}\n",
        5,
        "paths.include[2]",
        "expected a string, got a mapping",
    ),
    (
        "include as a string",
        "mode: advisory\npaths:\n  include: docs/**\n",
        3,
        "paths.include",
        'expected a list, got the string "docs/**"; write a list even for one item',
    ),
    (
        "include bad glob",
        "paths:\n  include:\n    - 'docs/**'\n    - 'docs//a.md'\n",
        4,
        "paths.include[1]",
        "invalid glob \"docs//a.md\": a glob cannot contain an empty path segment ('//')",
    ),
    (
        "extra_include empty string",
        "paths:\n  extra_include:\n    - ''\n",
        3,
        "paths.extra_include[0]",
        "expected a non-empty string",
    ),
    (
        "exclude left empty",
        "paths:\n  include: ['a/**']\n  exclude:\n",
        3,
        "paths.exclude",
        "expected a list, got an empty value; write [] for an empty list",
    ),
    (
        "rubric value",
        "rubrics:\n  '**/*.py': code\n  'docs/**': docs\n",
        3,
        'rubrics["docs/**"]',
        "expected one of 'content', 'code', 'completion' or 'research', got the string \"docs\"",
    ),
    (
        "rubric bad glob key",
        "rubrics:\n  '**/*.py': code\n  '!docs/**': content\n",
        3,
        'rubrics["!docs/**"]',
        "negation with '!' is not supported",
    ),
    (
        "rubrics not a mapping",
        "rubrics:\n  - code\n",
        2,
        "rubrics",
        "expected a mapping (key: value lines), got a list",
    ),
    (
        "sensitive item",
        "sensitive:\n  - secrets/**\n  - 42\n",
        3,
        "sensitive[1]",
        "expected a string, got a number (42); quote it to make it a string: '42'",
    ),
    (
        "sensitive unclosed class",
        "sensitive: ['a[b']\n",
        1,
        "sensitive[0]",
        "unclosed character class",
    ),
    (
        "authors item",
        "authors:\n  - octocat\n  - [nested]\n",
        3,
        "authors[1]",
        "expected a string, got a list",
    ),
    (
        "authors blank",
        "authors:\n  - octocat\n  - '@ '\n",
        3,
        "authors[1]",
        "expected a name, email or login, got an empty string",
    ),
    (
        "skip_label boolean word",
        "mode: advisory\nskip_label: yes\n",
        2,
        "skip_label",
        "expected a string, got a boolean (yes); YAML reads yes as a boolean, quote it: 'yes'",
    ),
    (
        "skip_label empty",
        "skip_label: ''\n",
        1,
        "skip_label",
        "expected a non-empty string",
    ),
    (
        "limits unknown key",
        "limits:\n  max_file: 10\n",
        2,
        "limits.max_file",
        'unknown key "max_file" (did you mean max_files?)',
    ),
    (
        "max_files zero",
        "limits:\n  max_chars_per_file: 2000\n  max_files: 0\n",
        3,
        "limits.max_files",
        "expected a whole number of at least 1, got a number (0)",
    ),
    (
        "max_files too big",
        "limits:\n  max_files: 100000\n",
        2,
        "limits.max_files",
        "expected a whole number of at most 500",
    ),
    (
        "max_files boolean",
        "limits:\n  max_files: true\n",
        2,
        "limits.max_files",
        "expected a whole number, got a boolean (true)",
    ),
    (
        "max_files quoted",
        "limits:\n  max_files: '10'\n",
        2,
        "limits.max_files",
        'expected a whole number, got the string "10"',
    ),
    (
        "max_chars_per_file float",
        "limits:\n  max_files: 10\n  max_chars_per_file: 1.5\n",
        3,
        "limits.max_chars_per_file",
        "expected a whole number, got a number (1.5)",
    ),
    (
        "max_chars_per_file too big",
        "limits:\n  max_chars_per_file: 5000000\n",
        2,
        "limits.max_chars_per_file",
        "at most 1000000",
    ),
    (
        "limits not a mapping",
        "limits: 10\n",
        1,
        "limits",
        "expected a mapping (key: value lines), got a number (10)",
    ),
    (
        "models unknown tier",
        "models:\n  quick: a\n  fast: b\n",
        3,
        "models.fast",
        'unknown key "fast"; expected one of: quick, deep, tiebreaker',
    ),
    (
        "models deep number",
        "models:\n  quick: a\n  deep: 3\n",
        3,
        "models.deep",
        "expected a string, got a number (3)",
    ),
    (
        "models tiebreaker blank",
        "models:\n  tiebreaker: '   '\n",
        2,
        "models.tiebreaker",
        "expected a non-empty string",
    ),
    (
        "task directive",
        "task:\n  directives:\n    - Cite sources.\n    - {a: b}\n",
        4,
        "task.directives[1]",
        "expected a string, got a mapping",
    ),
    (
        "task acceptance",
        "task:\n  acceptance: 5\n",
        2,
        "task.acceptance",
        "expected a string, got a number (5)",
    ),
    (
        "top-level unknown key",
        "mode: advisory\nrubric:\n  '*.py': code\n",
        2,
        "rubric",
        'unknown key "rubric" (did you mean rubrics?); expected one of: mode, on_outage, '
        "paths, rubrics",
    ),
    (
        "duplicate key",
        "mode: advisory\npaths: {}\nmode: blocking\n",
        3,
        "mode",
        "this key appears twice (first on line 1); keep one",
    ),
    (
        "duplicate nested key",
        "paths:\n  include: [a]\n  include: [b]\n",
        3,
        "paths.include",
        "this key appears twice (first on line 2)",
    ),
    (
        "mode as date",
        "mode: 2024-01-01\n",
        1,
        "mode",
        "got a date (2024-01-01)",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "key", "fragment"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_error_names_line_and_key(text: str, line: int, key: str | None, fragment: str) -> None:
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config(text)
    err = info.value
    assert (err.line, err.key) == (line, key), str(err)
    assert fragment in err.message
    assert str(err).startswith(f".github/judge.yml line {line}, key {key}: ")


def test_error_sentence_matches_the_documented_form() -> None:
    text = "mode: advisory\npaths:\n  include:\n    - a\n    - b\n    - {c: d}\n"
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config(text)
    assert str(info.value) == (
        ".github/judge.yml line 6, key paths.include[2]: expected a string, got a mapping"
    )
    assert info.value.column == 7


def test_error_reports_every_problem_first_one_in_file_order() -> None:
    text = "limits:\n  max_files: 0\nmode: x\nzzz: 1\n"
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config(text)
    err = info.value
    assert [(i.line, i.key) for i in err.issues] == [
        (2, "limits.max_files"),
        (3, "mode"),
        (4, "zzz"),
    ]
    assert str(err).endswith("(and 2 more problems)")
    assert err.issues[2].message.startswith('unknown key "zzz"; expected one of:')


SYNTAX_CASES: list[tuple[str, str, int, int, str]] = [
    ("unclosed flow list", "paths:\n  include: [a, b\n", 3, 1, "not valid YAML"),
    ("stray indentation", "mode: advisory\n  bad: 1\n", 2, 6, "mapping values are not allowed"),
    ("tab indentation", "paths:\n\tinclude: []\n", 2, 1, "'\\t'"),
    ("two documents", "mode: advisory\n---\nmode: blocking\n", 2, 1, "single document"),
    (
        "unsafe tag",
        "mode: !!python/object:os.system {}\n",
        1,
        7,
        "could not determine a constructor",
    ),
    ("unclosed quote", "skip_label: 'abc\n", 2, 1, "while scanning a quoted scalar (line 1)"),
]


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [case[1:] for case in SYNTAX_CASES],
    ids=[case[0] for case in SYNTAX_CASES],
)
def test_yaml_syntax_errors_give_line_and_column(
    text: str, line: int, column: int, fragment: str
) -> None:
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config(text)
    err = info.value
    assert (err.line, err.column, err.key) == (line, column, None), str(err)
    assert fragment in err.message
    assert str(err).startswith(f".github/judge.yml line {line}, column {column}: not valid YAML")


@pytest.mark.parametrize(
    ("text", "line", "got"),
    [
        ("- a\n- b\n", 1, "a list"),
        ("just a string\n", 1, 'the string "just a string"'),
        ("42\n", 1, "a number (42)"),
        ("# comment first\n- a\n", 2, "a list"),
    ],
)
def test_top_level_must_be_a_mapping(text: str, line: int, got: str) -> None:
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config(text)
    err = info.value
    assert (err.line, err.key) == (line, None)
    assert err.message == f"expected a mapping of settings (key: value lines), got {got}"


def test_error_path_can_be_renamed() -> None:
    with pytest.raises(RepoConfigError, match=r"^judge\.yml line 1, key mode: "):
        parse_repo_config("mode: x", path="judge.yml")


def test_error_needs_an_issue() -> None:
    with pytest.raises(ValueError, match="at least one issue"):
        RepoConfigError([])
    issue = ConfigIssue(3, 1, None, "boom")
    assert str(RepoConfigError([issue])) == ".github/judge.yml line 3, column 1: boom"


def test_aliases_and_anchors_are_followed() -> None:
    """YAML anchors work, and an error inside an aliased list still names a line."""
    text = "sensitive: &s ['a/**', 'b/**']\npaths:\n  extra_include: *s\n"
    c = parse_repo_config(text)
    assert c.paths.extra_include == ("a/**", "b/**")
    with pytest.raises(RepoConfigError) as info:
        parse_repo_config("sensitive: &s ['a/**', 7]\npaths:\n  extra_include: *s\n")
    assert [(i.line, i.key) for i in info.value.issues] == [
        (1, "paths.extra_include[1]"),
        (1, "sensitive[1]"),
    ]


# ---------------------------------------------------------------------------
# Hostile files: whatever the text, parsing ends quickly with a named problem.
# The limits are documented (docs/repo-config.md): 64 KiB, 32 levels of nesting,
# 10,000 values counting every use of an alias.


def parse_guarded(text: str) -> RepoConfig:
    """`parse_repo_config` in a daemon thread, so a regression that runs away fails
    this test after 30 s (generous on purpose) instead of hanging the whole suite."""
    outcome: list[RepoConfig | Exception] = []

    def run() -> None:
        try:
            outcome.append(parse_repo_config(text))
        except Exception as exc:  # noqa: BLE001 - handed back to the test below
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    if not outcome:
        pytest.fail("parsing did not finish within 30 s")
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def alias_bomb(levels: int = 9, fan: int = 9) -> str:
    """The billion-laughs file: about 430 bytes, 9**9 values once aliases are expanded."""
    lines = ['a0: &a0 ["lol"]']
    for n in range(1, levels + 1):
        lines.append(f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * fan)}]")
    return "\n".join(lines) + "\n"


def merge_bomb(levels: int = 9, fan: int = 9) -> str:
    """The same growth through merge keys, which PyYAML copies into each mapping."""
    lines = ["m0: &m0 {k: v}"]
    for n in range(1, levels + 1):
        lines.append(f"m{n}: &m{n} {{<<: [{','.join([f'*m{n - 1}'] * fan)}]}}")
    return "\n".join(lines) + "\n"


HOSTILE_CASES: list[tuple[str, str, int, str]] = [
    # (name, text, line, fragment of the message)
    ("alias bomb", alias_bomb(), 5, "more than 10,000 values"),
    ("merge-key bomb", merge_bomb(), 5, "more than 10,000 values"),
    ("recursive alias", "paths: &a {include: *a}\n", 1, "the alias *a is used inside"),
    ("recursive alias in a list", "mode: advisory\nx: &loop [1, *loop]\n", 2, "*loop"),
    ("recursive merge key", "limits: &l {<<: *l}\n", 1, "the alias *l is used inside"),
    ("5000 [", "[" * 5000, 1, "nested more than 32 levels"),
    ("5000 {", "{" * 5000, 1, "nested more than 32 levels"),
    ("5000 nested block lists", "- " * 5000 + "x\n", 1, "nested more than 32 levels"),
    (
        "deep block mappings",
        "".join(f"{'  ' * n}k{n}:\n" for n in range(40)),
        33,
        "nested more than 32 levels",
    ),
    (
        "aliases nest deeper than the text",
        "a: &a " + "[" * 30 + "]" * 30 + "\nb: " + "[" * 30 + "*a" + "]" * 30 + "\n",
        2,
        "nested more than 32 levels",
    ),
    ("too large", "mode: advisory\n" + "#" * 70_000 + "\n", 1, "over the limit of 64 KiB"),
    ("too large in bytes", "# " + "é" * 40_000 + "\n", 1, "80,003 bytes"),
    (
        "too many values without aliases",
        "authors: [" + ", ".join(["a"] * 12_000) + "]\n",
        1,
        "more than 10,000 values",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [case[1:] for case in HOSTILE_CASES],
    ids=[case[0] for case in HOSTILE_CASES],
)
def test_hostile_file_is_refused_with_a_named_problem(text: str, line: int, fragment: str) -> None:
    with pytest.raises(RepoConfigError) as info:
        parse_guarded(text)
    err = info.value
    assert (err.line, err.key) == (line, None), str(err)
    assert fragment in err.message, str(err)
    assert str(err).startswith(f".github/judge.yml line {line}, column ")


def test_alias_bomb_is_small() -> None:
    """The bomb the issue reported: a few hundred bytes of text."""
    assert len(alias_bomb().encode()) < 600


def test_nesting_up_to_the_limit_is_read() -> None:
    """32 lists or mappings inside each other (the top-level mapping is the first)
    parse; the file is then judged on its settings as usual."""
    text = "a: " + "[" * 31 + "]" * 31 + "\n"
    with pytest.raises(RepoConfigError) as info:
        parse_guarded(text)
    assert info.value.message.startswith('unknown key "a"'), str(info.value)
    with pytest.raises(RepoConfigError, match="nested more than 32 levels"):
        parse_guarded("a: " + "[" * 32 + "]" * 32 + "\n")


def test_a_file_of_exactly_64_kib_is_read() -> None:
    head = "mode: blocking\n"
    text = head + "#" * (64 * 1024 - len(head) - 1) + "\n"
    assert len(text.encode()) == 64 * 1024
    assert parse_guarded(text).mode == "blocking"
    with pytest.raises(RepoConfigError, match=r"65,537 bytes, over the limit of 64 KiB"):
        parse_guarded(text + " ")


def test_aliases_within_the_value_limit_still_work() -> None:
    """Anchors reused a few times are fine; only the expanded count is capped."""
    globs = ", ".join(f"'d{i}/**'" for i in range(1_000))
    text = f"sensitive: &s [{globs}]\npaths:\n  include: *s\n  extra_include: *s\n"
    c = parse_guarded(text)
    assert len(c.paths.include) == len(c.paths.extra_include) == len(c.sensitive) == 1_000


def test_many_problems_are_reported_in_bounded_time() -> None:
    """A file at the limits with an error on every key still ends, naming them all."""
    text = "".join(f"k{i}: 1\n" for i in range(4_900))
    assert len(text.encode()) < 64 * 1024
    with pytest.raises(RepoConfigError) as info:
        parse_guarded(text)
    assert len(info.value.issues) == 4_900
    assert str(info.value).endswith("(and 4899 more problems)")


def test_merge_keys_work_and_errors_name_the_line_as_written() -> None:
    """PyYAML rewrites merge keys while building values; errors still point at the
    line the repository owner wrote."""
    c = parse_guarded("limits:\n  <<: {max_files: 3}\n  max_chars_per_file: 50\n")
    assert (c.limits.max_files, c.limits.max_chars_per_file) == (3, 50)
    with pytest.raises(RepoConfigError) as info:
        parse_guarded("limits:\n  <<: {max_files: 3}\n  max_files: 0\n")
    assert (info.value.line, info.value.key) == (3, "limits.max_files"), str(info.value)
