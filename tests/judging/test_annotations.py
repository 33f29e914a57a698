"""Check-run annotations: line references in judge text, findings and improvements as
annotations, and batches of at most 50 per request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsonschema
import pytest

from bot.judge.settings import Mode
from bot.judging.annotations import (
    MAX_ANNOTATIONS_PER_RUN,
    Annotation,
    annotation_batches,
    line_ref,
    run_annotations,
)
from tests.support.fakes.github_openapi import spec_dict
from tests.support.verdict_builders import make_finding, make_record, make_round


def assert_valid_annotations(annotations: Sequence[Annotation]) -> None:
    """Each annotation is one GitHub accepts in a check run's `output.annotations`."""
    create = spec_dict()["paths"]["/repos/{owner}/{repo}/check-runs"]["post"]
    schema: dict[str, Any] = create["requestBody"]["content"]["application/json"]["schema"]
    item = schema["properties"]["output"]["properties"]["annotations"]["items"]
    for annotation in annotations:
        jsonschema.validate(annotation, item)


FILES = ["docs/a.md", "docs/b.md"]


@pytest.mark.parametrize(
    ("text", "files", "expected"),
    [
        ("docs/a.md:12: explain the term", FILES, ("docs/a.md", 12, 12)),
        ("See docs/b.md:4-9 for the broken table", FILES, ("docs/b.md", 4, 9)),
        ("`docs/b.md:7` repeats a heading", FILES, ("docs/b.md", 7, 7)),
        ("./docs/a.md:5 typo", FILES, ("docs/a.md", 5, 5)),
        ("line 12 contradicts the intro", ["docs/a.md"], ("docs/a.md", 12, 12)),
        ("Lines 3 to 5 of docs/b.md are vague", FILES, ("docs/b.md", 3, 5)),
        ("in docs/a.md around L20-L22", FILES, ("docs/a.md", 20, 22)),
        ("lines 9-4 are reversed", ["docs/a.md"], ("docs/a.md", 9, 9)),
        ("line 12 is vague", FILES, None),
        ("see https://example.com:8080 for context", FILES, None),
        ("meeting at 12:30 is wrong", ["docs/a.md"], None),
        ("other/file.md:3 is not judged", FILES, None),
        ("line 0 is odd", ["docs/a.md"], None),
        ("line 99999999999 is odd", ["docs/a.md"], None),
        ("add more examples", FILES, None),
        ("all 12 sections are fine", ["docs/a.md"], None),
    ],
)
def test_line_ref(text: str, files: list[str], expected: tuple[str, int, int] | None) -> None:
    ref = line_ref(text, files)
    assert (None if ref is None else (ref.path, ref.start, ref.end)) == expected


ANNOTATION_KEYS = {"path", "start_line", "end_line", "annotation_level", "message", "title"}


@pytest.mark.parametrize(
    ("mode", "hard_level"), [(Mode.BLOCKING, "failure"), (Mode.ADVISORY, "warning")]
)
def test_findings_and_line_improvements_become_annotations(mode: Mode, hard_level: str) -> None:
    record = make_record(
        files=FILES,
        improvements=["docs/b.md:8: cite a source", "be more concise"],
        mechanical_findings=[
            make_finding(line=3),
            make_finding(severity="soft", kind="long-line", line=4),
            make_finding(line=None),
        ],
        injection_findings=[make_finding(source="injection", kind="instruction", line=9)],
        previous_rounds=[make_round(improvements=["docs/a.md:2-3: merge these"])],
    )
    annotations = run_annotations([record], mode).shown
    by_line = {(a["path"], a["start_line"]): a for a in annotations}
    assert all(set(a) == ANNOTATION_KEYS for a in annotations)
    assert by_line[("docs/a.md", 3)]["annotation_level"] == hard_level
    assert by_line[("docs/a.md", 3)]["title"] == "mechanical finding: todo-marker (hard)"
    assert by_line[("docs/a.md", 4)]["annotation_level"] == "warning"
    assert by_line[("docs/a.md", 9)]["annotation_level"] == hard_level
    assert by_line[("docs/b.md", 8)]["annotation_level"] == "notice"
    assert by_line[("docs/b.md", 8)]["message"] == "docs/b.md:8: cite a source"
    assert by_line[("docs/b.md", 8)]["title"] == "deep judge (opencode/kimi-k2.5-free) suggests"
    assert by_line[("docs/a.md", 2)]["end_line"] == 3
    assert len(annotations) == 5
    assert_valid_annotations(annotations)


def test_duplicate_annotations_are_merged() -> None:
    same = "docs/a.md:2: merge these"
    record = make_record(improvements=[same], previous_rounds=[make_round(improvements=[same])])
    assert len(run_annotations([record], Mode.BLOCKING).shown) == 1


def test_annotation_batches() -> None:
    items = [{"path": "a", "start_line": i, "end_line": i} for i in range(1, 121)]
    batches = annotation_batches(items)  # type: ignore[arg-type]
    assert [len(b) for b in batches] == [50, 50, 20]
    assert [a for b in batches for a in b] == items
    assert annotation_batches([]) == []
    assert [len(b) for b in annotation_batches(items, size=60)] == [60, 60]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        annotation_batches(items, size=0)  # type: ignore[arg-type]


# --- at most 50 per run, the most relevant first ------------------------------------


def _where(annotations: Sequence[Annotation]) -> list[tuple[str, int, str]]:
    return [(str(a["path"]), int(a["start_line"]), str(a["title"])) for a in annotations]


@pytest.mark.parametrize("mode", list(Mode))
def test_run_annotations_rank_hard_then_soft_then_judges_by_file_and_line(mode: Mode) -> None:
    """Hard findings first (even in advisory mode, where they are only warnings), then
    soft ones, then the judges' suggestions; each by file and line."""
    record = make_record(
        files=FILES,
        improvements=["docs/a.md:1: define the term"],
        mechanical_findings=[
            make_finding(severity="soft", kind="long-line", path="docs/b.md", line=2),
            make_finding(severity="soft", kind="long-line", path="docs/a.md", line=7),
            make_finding(path="docs/b.md", line=9),
        ],
        injection_findings=[make_finding(source="injection", kind="instruction", line=4)],
    )
    chosen = run_annotations([record], mode)
    assert _where(chosen.shown) == [
        ("docs/a.md", 4, "injection finding: instruction (hard)"),
        ("docs/b.md", 9, "mechanical finding: todo-marker (hard)"),
        ("docs/a.md", 7, "mechanical finding: long-line (soft)"),
        ("docs/b.md", 2, "mechanical finding: long-line (soft)"),
        ("docs/a.md", 1, "deep judge (opencode/kimi-k2.5-free) suggests"),
    ]
    assert (chosen.total, chosen.left_out) == (5, 0)


def test_a_flood_of_findings_is_cut_to_50_and_counted() -> None:
    """The issue's case: a huge file full of broken anchors gave 3,184 annotations (64
    requests). The run keeps 50, hard ones first, and counts the rest."""
    soft = [
        make_finding(severity="soft", kind="broken-anchor", line=n, message=f"no #a{n}")
        for n in range(3_184, 0, -1)
    ]
    hard = make_finding(kind="conflict-marker", path="docs/b.md", line=99_000)
    record = make_record(
        files=FILES,
        mechanical_findings=[*soft, hard],
        improvements=["docs/a.md:1: fix the anchors"],
    )
    chosen = run_annotations([record], Mode.BLOCKING)
    assert len(chosen.shown) == MAX_ANNOTATIONS_PER_RUN == 50
    assert (chosen.total, chosen.left_out) == (3_186, 3_136)
    assert chosen.shown[0]["start_line"] == 99_000
    assert [a["start_line"] for a in chosen.shown[1:]] == list(range(1, 50))
    assert len(annotation_batches(chosen.shown)) == 1
    assert_valid_annotations(chosen.shown)


def test_run_annotations_merge_groups_and_duplicates() -> None:
    same = make_finding(line=3)
    first = make_record(mechanical_findings=[same])
    second = make_record(files=["docs/b.md"], mechanical_findings=[same, make_finding(line=1)])
    chosen = run_annotations([first, second], Mode.BLOCKING)
    assert [a["start_line"] for a in chosen.shown] == [1, 3]
    assert chosen.left_out == 0
    few = run_annotations([first, second], Mode.BLOCKING, limit=1)
    assert (len(few.shown), few.total, few.left_out) == (1, 2, 1)
