"""Mechanical checks: each finding carries its file and line; secrets are never echoed.

How Markdown is read for the link checks (slugs, anchors, links) is tested in test_markdown.py."""

from __future__ import annotations

import pytest

from bot.credentials import is_placeholder, redact
from bot.judge.checks.mechanical import check_task, has_hard_failure, run_mechanical_checks
from bot.judge.records import Finding, JudgedFile, TaskSpec

# Marker words are assembled so this file does not itself trip a marker grep.
T_MARK = "TO" + "DO"
F_MARK = "FIX" + "ME"
X_MARK = "X" + "XX"
NIE = "NotImplemented" + "Error"

# Credential-shaped test values, assembled at runtime so no scanner sees a literal.
GHP = "gh" + "p_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
PAT = "github_" + "pat_" + ("11ABCDEFG0" + "aZ3x9Qw7Rt") * 4 + "Kp"
AKIA = "AK" + "IA" + "Z7Q2W9E4R1T6Y3U8"
SK = "s" + "k-proj-" + "Tq8Vz2Lm5Nx7Bc4Kd9Hf3Jg6Ws1Ep0Ry"
PEM_HEAD = "-----BEGIN " + "RSA PRIVATE KEY-----"
PEM_BODY = "MIIEowIBAAKCAQEA7Vx2v3Kq9Zr8Jt5Lp4Wm6Nb1Hc0Gd3Fe2Sa7Qy"


def f(path: str, content: str, **kw: object) -> JudgedFile:
    return JudgedFile(path=path, content=content, **kw)


def kinds(findings: list[Finding]) -> list[tuple[str, str, int | None, str]]:
    return [(x.kind, x.path, x.line, x.severity) for x in findings]


def test_clean_files_have_no_findings() -> None:
    files = [
        f("README.md", "# Title\n\nSee [guide](docs/guide.md#setup).\n"),
        f("docs/guide.md", "# Guide\n\n## Setup\n\nBack to [readme](../README.md).\n"),
        f("pkg/data.json", '{"a": [1, 2]}'),
        f("pyproject.toml", '[project]\nname = "x"\n'),
        f("ci.yml", "on: push\njobs: {}\n"),
        f("main.py", "def main() -> None:\n    return None\n"),
    ]
    assert run_mechanical_checks(files) == []


# ----------------------------------------------------------------------- conflict markers


def test_conflict_markers_are_hard_with_lines() -> None:
    text = "a\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> branch\nz\n"
    found = run_mechanical_checks([f("x.py", text)])
    assert kinds(found) == [
        ("conflict-marker", "x.py", 2, "hard"),
        ("conflict-marker", "x.py", 4, "hard"),
        ("conflict-marker", "x.py", 6, "hard"),
    ]
    assert has_hard_failure(found)


def test_diff3_base_marker() -> None:
    text = "<<<<<<< ours\na\n||||||| base\nb\n=======\nc\n>>>>>>> theirs\n"
    assert [x.line for x in run_mechanical_checks([f("x.txt", text)])] == [1, 3, 5, 7]


def test_setext_heading_underline_is_not_a_conflict() -> None:
    """======= under a title is Markdown, not a conflict, when no conflict is open."""
    assert run_mechanical_checks([f("a.txt", "Title\n=======\n\ntext\n")]) == []


def test_conflict_markers_in_markdown_code_block_are_documentation() -> None:
    text = "# Git\n\n```\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> other\n```\n"
    assert run_mechanical_checks([f("git.md", text)]) == []


def test_markers_need_exactly_seven_and_a_space() -> None:
    text = "<<<<<<<<< not\n>>>>>>>x\nx <<<<<<< y\n"
    assert run_mechanical_checks([f("a.txt", text)]) == []


def test_conflict_markers_only_on_added_lines_when_known() -> None:
    text = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"
    found = run_mechanical_checks([f("a.txt", text, added_lines=[3])])
    assert [x.line for x in found] == [3]


# ----------------------------------------------------------------------- markers


@pytest.mark.parametrize(
    "line",
    [
        f"# {T_MARK}: finish",
        f"// {F_MARK} later",
        f"x = 1  # {X_MARK}",
        f"    raise {NIE}",
        "    to" + "do!()",
        "    unimplemented" + "!()",
    ],
)
def test_unfinished_markers_are_soft(line: str) -> None:
    found = run_mechanical_checks([f("m.py", "ok\n" + line + "\n")])
    assert kinds(found) == [("todo-marker", "m.py", 2, "soft")]
    assert not has_hard_failure(found)


@pytest.mark.parametrize(
    "line",
    [
        "todos = []",
        T_MARK + "S list",
        "auto" + F_MARK + "r",
        "xxx lowercase",
        "A" + T_MARK + "B",
        "NotImplemented",
    ],
)
def test_marker_lookalikes_are_ignored(line: str) -> None:
    assert run_mechanical_checks([f("m.py", line + "\n")]) == []


def test_markers_respect_added_lines() -> None:
    text = f"# {T_MARK} old\nfresh\n# {T_MARK} new\n"
    assert [x.line for x in run_mechanical_checks([f("a.py", text, added_lines=[2, 3])])] == [3]
    assert run_mechanical_checks([f("a.py", text, added_lines=[])]) == []


# ----------------------------------------------------------------------- empty / removed


@pytest.mark.parametrize("content", ["", "   \n\n\t"])
def test_empty_file_is_soft_and_reported_once(content: str) -> None:
    found = run_mechanical_checks([f("data.json", content)])
    assert kinds(found) == [("empty-file", "data.json", None, "soft")]


def test_removed_and_binary_files_are_skipped() -> None:
    files = [
        f("gone.json", "{broken", status="removed"),
        f("img.png", "\x00\x01<<<<<<< HEAD\n"),
        f("blob.json", "\x00{broken"),
    ]
    assert run_mechanical_checks(files) == []


def test_binary_files_still_get_the_secret_check() -> None:
    """Their text reaches the judges, so a credential in them is as hard as anywhere."""
    found = run_mechanical_checks([f("dump.bin", f"\x00\x01junk\ntoken={GHP}\n")])
    assert kinds(found) == [("secret", "dump.bin", 2, "hard")]
    assert GHP not in found[0].message


def test_task_texts_get_the_secret_check() -> None:
    task = TaskSpec(
        task_id="t",
        description=f"Deploy with\n{GHP}",
        acceptance=f"uses {AKIA}",
        directives=["no secrets here", f"key {SK}"],
    )
    found = check_task(task)
    assert kinds(found) == [
        ("secret", "<task description>", 2, "hard"),
        ("secret", "<task acceptance>", 1, "hard"),
        ("secret", "<task directive 2>", 1, "hard"),
    ]
    assert all(v not in x.message for x in found for v in (GHP, AKIA, SK))
    assert check_task(TaskSpec(task_id="t", description="plain words")) == []


BIG = "9" * 5000  # past Python's 4300-digit int conversion limit
DEEP = "[" * 100_000  # past the recursion limit of every parser


@pytest.mark.parametrize(
    ("path", "content", "kind", "severity", "words"),
    [
        ("a.json", BIG, "invalid-json", "hard", "4300"),
        ("a.json", DEEP, "invalid-json", "hard", "nested too deeply"),
        ("a.jsonl", f'{{"a": 1}}\n{BIG}\n', "invalid-json", "hard", "4300"),
        ("a.jsonl", f"{DEEP}\n", "invalid-json", "hard", "nested too deeply"),
        ("a.toml", f"a = {BIG}\n", "invalid-toml", "hard", "4300"),
        ("a.toml", f"a = {DEEP}\n", "invalid-toml", "hard", "nested too deeply"),
        ("a.toml", "a = " + "{b = " * 100_000, "invalid-toml", "hard", "nested too deeply"),
        ("a.yaml", f"a: {BIG}\n", "invalid-yaml", "soft", "4300"),
        ("a.yaml", DEEP, "invalid-yaml", "soft", "nested too deeply"),
        ("a.yml", "- " * 10_000 + "x\n", "invalid-yaml", "soft", "nested too deeply"),
    ],
)
def test_values_the_parsers_cannot_build_are_findings(
    path: str, content: str, kind: str, severity: str, words: str
) -> None:
    """Not syntax errors, but a file no tool can load: reported, never a crash."""
    found = run_mechanical_checks([f(path, content)])
    assert [(x.kind, x.severity) for x in found] == [(kind, severity)]
    assert words in found[0].message


# ----------------------------------------------------------------------- structured formats


def test_invalid_json_is_hard_with_line() -> None:
    found = run_mechanical_checks([f("cfg/a.json", '{\n  "a": 1,\n  "b": \n}\n')])
    assert kinds(found) == [("invalid-json", "cfg/a.json", 4, "hard")]
    assert "Expecting value" in found[0].message


def test_json_with_byte_order_mark_is_valid() -> None:
    assert run_mechanical_checks([f("a.json", '\ufeff{"a": 1}')]) == []


def test_jsonl_is_checked_per_line() -> None:
    found = run_mechanical_checks([f("v.jsonl", '{"a": 1}\n\n{"a": \n{"b": 2}\n')])
    assert kinds(found) == [("invalid-json", "v.jsonl", 3, "hard")]


@pytest.mark.parametrize(
    "path",
    ["tsconfig.json", "web/tsconfig.build.json", ".vscode/settings.json", "devcontainer.json"],
)
def test_json_with_comments_files_are_not_parsed(path: str) -> None:
    assert run_mechanical_checks([f(path, '{\n  // comment\n  "a": 1,\n}\n')]) == []


def test_invalid_toml_is_hard_with_line() -> None:
    found = run_mechanical_checks([f("pyproject.toml", '[project]\nname = "x"\nname = "y"\n')])
    assert kinds(found) == [("invalid-toml", "pyproject.toml", 3, "hard")]


def test_invalid_yaml_is_soft_with_line() -> None:
    found = run_mechanical_checks([f(".github/workflows/ci.yml", "on: push\njobs:\n  a: [1, 2\n")])
    assert [(x.kind, x.severity) for x in found] == [("invalid-yaml", "soft")]
    assert found[0].line is not None and found[0].line >= 3


def test_yaml_error_message_does_not_quote_the_source() -> None:
    """PyYAML's str(error) shows the offending text; a secret there must not leak."""
    text = f"token: {GHP}\nbad: [\n"
    found = run_mechanical_checks([f("s.yaml", text)])
    assert {x.kind for x in found} == {"secret", "invalid-yaml"}
    for x in found:
        assert GHP not in x.message


def test_yaml_application_tags_and_multiple_documents_are_valid() -> None:
    text = "Resources:\n  B: !Ref Thing\n  C: !GetAtt [X, Arn]\n---\nsecond: doc\n"
    assert run_mechanical_checks([f("stack.yaml", text)]) == []


# ----------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (GHP, "GitHub token"),
        (PAT, "GitHub fine-grained token"),
        (AKIA, "AWS access key id"),
        (SK, "API secret key (sk-)"),
    ],
)
def test_tokens_are_hard_and_never_echoed(value: str, label: str) -> None:
    text = f"line one\nconfig = '{value}'\n"
    found = run_mechanical_checks([f("settings.py", text, added_lines=[1])])
    assert kinds(found) == [("secret", "settings.py", 2, "hard")]
    assert label in found[0].message
    assert value not in found[0].model_dump_json()
    assert value[-12:] not in found[0].message


def test_private_key_block_is_hard_and_never_echoed() -> None:
    text = f"x\n{PEM_HEAD}\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\n"
    found = run_mechanical_checks([f("deploy/key.pem", text)])
    assert kinds(found) == [("secret", "deploy/key.pem", 2, "hard")]
    assert "private key" in found[0].message
    assert PEM_BODY not in found[0].message


def test_private_key_header_in_prose_is_not_a_key() -> None:
    text = f"Keys start with `{PEM_HEAD}` followed by base64.\n\nThat is all.\n"
    assert run_mechanical_checks([f("docs/keys.md", text)]) == []


@pytest.mark.parametrize(
    "value",
    [
        "AK" + "IAIOSFODNN7EXAMPLE",
        "gh" + "p_" + "x" * 36,
        "gh" + "p_" + "your" + "Token" * 6 + "abcdefghijkl"[:2],
        "s" + "k-" + "this-is-a-long-kebab-case-identifier-name",
        "s" + "k-" + "0" * 40,
    ],
)
def test_placeholders_are_not_secrets(value: str) -> None:
    assert run_mechanical_checks([f("docs.md", f"Use `{value}` here.\n")]) == []


def test_secret_regexes_need_boundaries() -> None:
    assert run_mechanical_checks([f("a.txt", "x" + GHP + "\n")]) == []


def test_redact_and_placeholder_helpers() -> None:
    assert redact(f"a {GHP} b {PEM_HEAD}") == "a [redacted] b [redacted]"
    assert is_placeholder("aaaaaa") and not is_placeholder("aB3dE5fG7h")


# ----------------------------------------------------------------------- Markdown links


def test_broken_relative_link_with_known_paths() -> None:
    files = [f("docs/index.md", "# Index\n\n[ok](api.md) [gone](missing.md) [dir](../src)\n")]
    found = run_mechanical_checks(files, known_paths={"docs/api.md", "src/app.py"})
    assert kinds(found) == [("broken-link", "docs/index.md", 3, "soft")]
    assert "docs/missing.md" in found[0].message


def test_unknown_tree_does_not_report_outside_links() -> None:
    """Without known_paths (None or empty) a link to an unchanged file cannot be verified."""
    files = [f("a.md", "[x](elsewhere.md)\n")]
    assert run_mechanical_checks(files) == []
    assert run_mechanical_checks(files, known_paths=frozenset()) == []


def test_link_to_file_removed_by_the_change_is_broken() -> None:
    files = [f("a.md", "[x](old.md)\n"), f("old.md", "", status="removed")]
    assert kinds(run_mechanical_checks(files)) == [("broken-link", "a.md", 1, "soft")]


def test_link_outside_repository() -> None:
    found = run_mechanical_checks([f("a.md", "[up](../../etc/passwd)\n")])
    assert kinds(found) == [("broken-link", "a.md", 1, "soft")]
    assert "outside" in found[0].message


@pytest.mark.parametrize(
    "target",
    [
        "https://example.com/x.md",
        "mailto:a@b.c",
        "//cdn.example/x",
        "#",
        "{{ site.url }}/x",
        "../README.md#L10",
        "../README.md#L10-L20",
    ],
)
def test_links_that_are_not_checked(target: str) -> None:
    files = [f("docs/a.md", f"[x]({target})\n"), f("README.md", "# Readme\n")]
    assert run_mechanical_checks(files, known_paths={"README.md"}) == []


def test_repo_root_links_query_and_percent_encoding() -> None:
    files = [f("docs/a.md", "[r](/src/My%20File.md?plain=1) [s](<../src/My File.md>)\n")]
    assert run_mechanical_checks(files, known_paths={"src/My File.md"}) == []


def test_anchor_in_same_file_and_other_file() -> None:
    files = [
        f(
            "README.md",
            "# Project\n\n## Getting Started\n\n"
            "[a](#getting-started) [b](#nope) [c](docs/x.md#api-reference) [d](docs/x.md#gone)\n",
        ),
        f("docs/x.md", "# API Reference\n"),
    ]
    found = run_mechanical_checks(files)
    assert kinds(found) == [
        ("broken-anchor", "README.md", 5, "soft"),
        ("broken-anchor", "README.md", 5, "soft"),
    ]
    assert "#nope in this file" in found[0].message
    assert "#gone in docs/x.md" in found[1].message


def test_anchor_matching_is_case_insensitive_and_user_content_prefix() -> None:
    files = [f("a.md", "# Hello World\n\n[x](#Hello-World) [y](#user-content-hello-world)\n")]
    assert run_mechanical_checks(files) == []


def test_anchor_into_file_we_do_not_have_is_not_checked() -> None:
    files = [f("a.md", "[x](b.md#whatever)\n")]
    assert run_mechanical_checks(files, known_paths={"b.md"}) == []


def test_anchor_into_non_markdown_is_not_checked() -> None:
    files = [f("a.md", "[x](b.py#whatever)\n"), f("b.py", "x = 1\n")]
    assert run_mechanical_checks(files) == []


def test_links_only_on_added_lines_when_known() -> None:
    files = [f("a.md", "[old](gone1.md)\n[new](gone2.md)\n", added_lines=[2])]
    found = run_mechanical_checks(files, known_paths={"x"})
    assert [x.line for x in found] == [2]


def test_links_in_code_are_ignored() -> None:
    text = "`[x](gone.md)`\n\n```md\n[y](gone.md)\n```\n\n    plain\n"
    assert run_mechanical_checks([f("a.md", text)], known_paths={"x"}) == []


def test_link_to_directory_via_known_tree() -> None:
    files = [f("a.md", "[d](docs/) [e](docs)\n")]
    assert run_mechanical_checks(files, known_paths={"docs/x.md"}) == []


def test_findings_are_ordered_by_file_then_line() -> None:
    files = [
        f("b.py", f"x\n# {T_MARK}\n<<<<<<< HEAD\n"),
        f("a.json", "{"),
    ]
    found = run_mechanical_checks(files)
    assert [(x.path, x.line) for x in found] == [("b.py", 2), ("b.py", 3), ("a.json", 1)]


def test_has_hard_failure() -> None:
    soft = Finding(source="mechanical", kind="k", severity="soft", path="p", message="m")
    hard = soft.model_copy(update={"severity": "hard"})
    assert not has_hard_failure([])
    assert not has_hard_failure([soft])
    assert has_hard_failure([soft, hard])
