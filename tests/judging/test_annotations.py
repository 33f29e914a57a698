"""Check-run annotations: line references in judge text, findings and improvements as
annotations, and batches of at most 50 per request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsonschema
import pytest

from bot.judge.config import Mode
from bot.judging.annotations import Annotation, annotation_batches, annotations_for, line_ref
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
    annotations = annotations_for(record, mode)
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
    assert len(annotations_for(record, Mode.BLOCKING)) == 1


def test_annotation_batches() -> None:
    items = [{"path": "a", "start_line": i, "end_line": i} for i in range(1, 121)]
    batches = annotation_batches(items)  # type: ignore[arg-type]
    assert [len(b) for b in batches] == [50, 50, 20]
    assert [a for b in batches for a in b] == items
    assert annotation_batches([]) == []
    assert [len(b) for b in annotation_batches(items, size=60)] == [60, 60]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        annotation_batches(items, size=0)  # type: ignore[arg-type]
