"""The dataset's schema: good lines become examples, bad ones are named by line number,
and diffs become the files and hunks the judges read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.evaluation.dataset import (
    MAX_PROBLEMS,
    DatasetError,
    Example,
    diff_files,
    example_line,
    parse_dataset,
    read_dataset,
)
from bot.judge.records import RubricName

TASK = {"description": "Explain the cache rollout", "acceptance": "Names the cause"}
FILES = [{"path": "docs/a.md", "content": "# A\n"}, {"path": "docs/b.md", "content": "# B\n"}]


def line(**fields: Any) -> str:
    body: dict[str, Any] = {"task": TASK, "files": FILES, "expected": "accept"}
    body.update(fields)
    return json.dumps({k: v for k, v in body.items() if v is not None})


def problems(*lines: str) -> list[str]:
    with pytest.raises(DatasetError) as caught:
        parse_dataset(list(lines), "set.jsonl")
    return caught.value.problems


def test_a_good_line_becomes_an_example() -> None:
    (item,) = parse_dataset([line(id="one", scores={"semantic": 4}, sensitive=True)], "s")
    assert (item.name, item.line) == ("one", 1)
    example = item.example
    assert example.rubric is RubricName.CONTENT
    assert [f.path for f in example.judged_files()] == ["docs/a.md", "docs/b.md"]
    assert example.context().empty
    assert example.task_spec(item.name).task_id == "one"
    assert example.sensitive and example.scores == {"semantic": 4}


def test_examples_without_an_id_are_named_by_their_line_and_blank_lines_are_skipped() -> None:
    items = parse_dataset(["", line(), "   ", line(task={**TASK, "id": "issue-9"})], "s")
    assert [(i.name, i.line) for i in items] == [("line-2", 2), ("line-4", 4)]
    assert items[1].example.task_spec(items[1].name).task_id == "issue-9"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "line 1: not JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "line 1: expected a JSON object, got list"),
        (line(expected=None), "line 1: expected: Field required"),
        (line(expected="maybe"), "line 1: expected: Input should be 'accept' or 'reject'"),
        (line(task={"acceptance": "x"}), "line 1: task.description: Field required"),
        (line(task={"description": ""}), "line 1: task.description: String should have at least"),
        (line(files=None), "give the change as either `files` or `diff`, not both or neither"),
        (line(diff="diff --git a/x b/x\n"), "either `files` or `diff`, not both or neither"),
        (line(files=[]), "files: the change holds no file"),
        (line(files=[FILES[0], FILES[0]]), "files: 'docs/a.md' is given twice"),
        (line(files=[{"path": "", "content": ""}]), "files.0.path: String should have at least"),
        (line(files=None, diff="just text"), "diff: no file header"),
        (line(scores={"depth": 3}), "scores: 'depth' is not a dimension of the content rubric"),
        (line(scores={"semantic": -1}), "scores: semantic must be a finite number, 0 or more"),
        (line(rubric="poetry"), "line 1: rubric: Input should be 'content', 'code',"),
        (line(id="has space"), "line 1: id: must be 1 to 200 letters"),
        (line(verdict="accept"), "line 1: verdict: Extra inputs are not permitted"),
    ],
)
def test_a_bad_line_is_named(text: str, message: str) -> None:
    (problem,) = problems(text)
    assert problem.startswith("line 1: ")
    assert message in problem


def test_a_bad_line_never_quotes_the_files_it_carries() -> None:
    secret_content = "x" * 50 + "TOKEN-LIKE-CONTENT"
    (problem,) = problems(line(files=[{"path": "a", "content": secret_content}], expected=1))
    assert "TOKEN-LIKE-CONTENT" not in problem


def test_every_bad_line_is_listed_and_nothing_is_kept() -> None:
    got = problems(line(id="a"), "{", line(id="a"), line(expected="no"))
    assert [p.split(":")[0] for p in got] == ["line 2", "line 3", "line 4"]
    assert "id 'a' is also line 1's" in got[1]


def test_a_file_of_the_wrong_kind_lists_twenty_problems_then_counts() -> None:
    with pytest.raises(DatasetError) as caught:
        parse_dataset(["nope"] * (MAX_PROBLEMS + 5), "set.jsonl")
    error = caught.value
    assert len(error.problems) == MAX_PROBLEMS and error.more == 5
    lines = error.lines()
    assert lines[0].startswith("set.jsonl: line 1: not JSON")
    assert lines[-1] == "set.jsonl: … and 5 more problems"
    assert str(error).endswith("(and 5 more)")


def test_an_empty_dataset_is_an_error() -> None:
    assert problems("", " ") == ["holds no example (one JSON object per line)"]


def test_read_dataset_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text(line(id="one") + "\n" + line(id="two") + "\n", encoding="utf-8")
    assert [i.name for i in read_dataset(path)] == ["one", "two"]


def test_an_unreadable_or_binary_file_is_one_problem(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as caught:
        read_dataset(tmp_path / "missing.jsonl")
    assert caught.value.lines() == [
        f"{tmp_path / 'missing.jsonl'}: cannot read it (No such file or directory)"
    ]
    binary = tmp_path / "set.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DatasetError, match="is not UTF-8 text"):
        read_dataset(binary)


def test_example_line_round_trips() -> None:
    (item,) = parse_dataset([line(id="one", source={"kind": "overridden", "seq": 4})], "s")
    text = example_line(item.example)
    assert Example.model_validate_json(text) == item.example
    assert "rubric" not in json.loads(text)  # defaults left out


# -- diffs --------------------------------------------------------------------------------

GIT_DIFF = """\
diff --git a/docs/guide.md b/docs/guide.md
index 1111111..2222222 100644
--- a/docs/guide.md
+++ b/docs/guide.md
@@ -1,3 +1,3 @@
 # Guide
--- a rule
+Use the cache.
 keep
\\ No newline at end of file
diff --git a/docs/new.md b/docs/new.md
new file mode 100644
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
++++ plus
diff --git a/docs/old.md b/docs/old.md
deleted file mode 100644
--- a/docs/old.md
+++ /dev/null
@@ -1 +0,0 @@
-gone
"""


def test_a_git_diff_becomes_files_and_hunks() -> None:
    guide, new, old = diff_files(GIT_DIFF)
    assert (guide.path, new.path, old.path) == ("docs/guide.md", "docs/new.md", "docs/old.md")
    # the removed line "-- a rule" reads like a header; the hunk's counts say otherwise
    assert guide.new_side() == ("# Guide\nUse the cache.\nkeep\n", [2])
    assert new.new_side() == ("# New\n+++ plus\n", [1, 2])
    assert old.removed and not guide.removed
    judged = old.judged()
    assert judged.removed and judged.content == ""
    assert guide.judged().added_lines == [2]
    assert guide.context().diff.startswith("@@ -1,3 +1,3 @@")
    assert guide.context().diff.endswith("\\ No newline at end of file")


def test_a_plain_unified_diff() -> None:
    text = "--- a/notes.txt\t2026-01-01\n+++ b/notes.txt\t2026-01-02\n@@ -1 +1 @@\n-old\n+new\n"
    (notes,) = diff_files(text)
    assert notes.path == "notes.txt"
    assert notes.new_side() == ("new\n", [1])
    two = text + "--- other.txt\n+++ other.txt\n@@ -0,0 +1 @@\n+x\n"
    assert [d.path for d in diff_files(two)] == ["notes.txt", "other.txt"]


def test_a_hunk_without_counts_and_an_empty_context_line() -> None:
    text = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1,3 @@\n\n+two\n+three\n"
    (a,) = diff_files(text)
    assert a.new_side() == ("\ntwo\nthree\n", [2, 3])


def test_a_diff_with_no_hunk_judges_an_empty_file() -> None:
    (binary,) = diff_files("diff --git a/logo.png b/logo.png\nBinary files differ\n")
    assert binary.new_side() == ("", [])


def test_a_diff_example_gives_the_engine_files_and_their_hunks() -> None:
    (item,) = parse_dataset([line(files=None, diff=GIT_DIFF)], "s")
    files = item.example.judged_files()
    assert [(f.path, f.removed) for f in files] == [
        ("docs/guide.md", False),
        ("docs/new.md", False),
        ("docs/old.md", True),
    ]
    diffs = item.example.context().diffs
    assert [d.path for d in diffs] == ["docs/guide.md", "docs/new.md", "docs/old.md"]
    assert diffs[0].note == "from the evaluation dataset"


def test_a_diff_naming_one_file_twice_is_refused() -> None:
    twice = "diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n" * 2
    (problem,) = problems(line(files=None, diff=twice))
    assert "diff: 'x' is given twice" in problem


def test_no_newline_markers_inside_a_hunk() -> None:
    text = (
        "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-old\n"
        "\\ No newline at end of file\n+new\n\\ No newline at end of file\n"
    )
    (a,) = diff_files(text)
    assert a.new_side() == ("new\n", [1])
    assert a.hunks.count("No newline") == 2
