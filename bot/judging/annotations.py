"""Check-run annotations: the file lines a verdict points at.

Two sources become annotations: mechanical and injection findings that carry a line,
and judge improvements whose text names one (`docs/a.md:12`, `lines 3-5`, `L20`).
A judge writes free text, so `line_ref` only trusts paths that were actually judged and
line numbers GitHub would accept; anything else stays in the run's text, unannotated.

A run carries at most MAX_ANNOTATIONS_PER_RUN annotations (`run_annotations`): GitHub
appends each update's annotations, at most 50 per request, and every request is paced
as a write on the installation, so a file full of broken anchors once cost 64 requests
(about a minute of the installation's writes) for 3,184 annotations nobody reads. The
most relevant are kept: hard findings before soft ones, the judges' suggestions after
the findings, each by file and line; the run's summary says how many were left out.

Pure functions over verdict records; `bot.judging.check_run` puts the result into the
run and sends it in `annotation_batches` (GitHub takes at most 50 per request).
Every string here is cut and scrubbed by `one_line`; the renderer scrubs again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from bot.gfm import one_line
from bot.judge.records import Finding, VerdictRecord
from bot.judge.settings import Mode
from bot.record_view import rounds_of

ANNOTATIONS_PER_REQUEST = 50
MAX_ANNOTATIONS_PER_RUN = 50
ANNOTATION_MESSAGE_LIMIT = 4_000
ANNOTATION_TITLE_LIMIT = 255
LINE_REF_SCAN = 1_000
MAX_LINE = 1_000_000

Annotation = dict[str, str | int]


def annotation_batches(
    annotations: Sequence[Annotation], size: int = ANNOTATIONS_PER_REQUEST
) -> list[list[Annotation]]:
    """Split annotations into requests of at most `size` (GitHub accepts 50)."""
    if size < 1:
        raise ValueError("batch size must be positive")
    return [list(annotations[i : i + size]) for i in range(0, len(annotations), size)]


# `docs/x.md:12`, `docs/x.md:12-14`; the path must be one of the judged files, which
# keeps URLs (`http://host:80`) and times (`12:30`) out.
# A path starts only where a token does (the lookbehind): tried at every position of a long
# word, the scan to its end made 20,000 letters of model output take seconds.
_PATH_LINE = re.compile(
    r"(?<![^\s:`'\"()\[\]<>,;])"
    r"(?P<path>[^\s:`'\"()\[\]<>,;]+):(?P<start>\d+)(?:\s*[-\u2013]\s*(?P<end>\d+))?"
)
_LINE_WORD = re.compile(
    r"(?i:\blines?)\s+(?P<start>\d+)(?:\s*(?:[-\u2013]|to)\s*(?P<end>\d+))?"
    r"|\bL(?P<lstart>\d+)(?:-L?(?P<lend>\d+))?\b"
)


@dataclass(frozen=True)
class LineRef:
    path: str
    start: int
    end: int


def _span(start: str, end: str | None) -> tuple[int, int] | None:
    first = int(start)
    last = int(end) if end else first
    # Zero is no line; absurd numbers are a model's noise and GitHub would refuse them.
    if not 1 <= first <= MAX_LINE or last > MAX_LINE:
        return None
    return (first, last) if last >= first else (first, first)


def line_ref(text: str, files: Sequence[str]) -> LineRef | None:
    """The file line an improvement points at, if it names one.

    `path:12` (or `path:12-14`) with a judged path wins; otherwise `line 12` /
    `lines 12-14` / `L12` refers to a judged file named in the text, or to the only
    judged file. Only the start of the text is read: that is where a judge names the
    place, and long answers would make this slow."""
    text = text[:LINE_REF_SCAN]
    known = set(files)
    for match in _PATH_LINE.finditer(text):
        candidate = match.group("path")
        if candidate not in known:
            candidate = candidate.removeprefix("./")
        if candidate in known:
            span = _span(match.group("start"), match.group("end"))
            if span:
                return LineRef(candidate, *span)
    word = _LINE_WORD.search(text)
    if word is None:
        return None
    start = word.group("start") or word.group("lstart")
    end = word.group("end") or word.group("lend")
    span = _span(start, end)
    if span is None:
        return None
    named = sorted((f for f in files if f and f in text), key=len, reverse=True)
    if named:
        return LineRef(named[0], *span)
    if len(known) == 1:
        return LineRef(next(iter(known)), *span)
    return None


def _finding_level(finding: Finding, mode: Mode) -> str:
    # A hard finding fails the run only where the run can fail; in advisory mode a red
    # annotation on a neutral check would contradict the conclusion.
    if finding.severity == "hard" and mode is Mode.BLOCKING:
        return "failure"
    return "warning"


def annotation_at(
    path: str, start: int, end: int, level: str, message: str, title: str
) -> Annotation:
    """One annotation in GitHub's shape, its message and title cut to GitHub's limits."""
    return {
        "path": path,
        "start_line": start,
        "end_line": end,
        "annotation_level": level,
        "message": one_line(message, ANNOTATION_MESSAGE_LIMIT) or "(no message)",
        "title": one_line(title, ANNOTATION_TITLE_LIMIT),
    }


# Relevance ranks, most relevant first: a hard finding is a fact that fails the run,
# a soft one a fact worth a look, a judge's suggestion an opinion.
_HARD, _SOFT, _SUGGESTION = 0, 1, 2


def _ranked(record: VerdictRecord, mode: Mode) -> Iterator[tuple[int, Annotation]]:
    """Findings with a line, and improvements that name a line, each with its rank."""
    for finding in [*record.mechanical_findings, *record.injection_findings]:
        if finding.line is None:
            continue
        annotation = annotation_at(
            finding.path,
            finding.line,
            finding.line,
            _finding_level(finding, mode),
            finding.message,
            f"{finding.source} finding: {finding.kind} ({finding.severity})",
        )
        yield (_HARD if finding.severity == "hard" else _SOFT), annotation
    for view in rounds_of(record):
        for improvement in dict.fromkeys(view.improvements):
            ref = line_ref(improvement, record.files)
            if ref is None:
                continue
            annotation = annotation_at(
                ref.path,
                ref.start,
                ref.end,
                "notice",
                improvement,
                f"{view.tier.value} judge ({view.model}) suggests",
            )
            yield _SUGGESTION, annotation


def _distinct(ranked: Iterator[tuple[int, Annotation]]) -> list[tuple[int, Annotation]]:
    # The same place and message from two rounds (or two groups) is one annotation.
    seen: set[tuple[str, int, int, str]] = set()
    out: list[tuple[int, Annotation]] = []
    for rank, item in ranked:
        key = (
            str(item["path"]),
            int(item["start_line"]),
            int(item["end_line"]),
            str(item["message"]),
        )
        if key not in seen:
            seen.add(key)
            out.append((rank, item))
    return out


def _relevance(entry: tuple[int, Annotation]) -> tuple[int, str, int, int]:
    rank, item = entry
    return (rank, str(item["path"]), int(item["start_line"]), int(item["end_line"]))


@dataclass(frozen=True)
class RunAnnotations:
    """The annotations a run carries, and how many there were before the cap."""

    shown: list[Annotation]
    total: int

    @property
    def left_out(self) -> int:
        return self.total - len(self.shown)


def run_annotations(
    records: Sequence[VerdictRecord], mode: Mode, *, limit: int = MAX_ANNOTATIONS_PER_RUN
) -> RunAnnotations:
    """The `limit` most relevant annotations of every group of a run (see the module
    docstring for the order), and the count of all of them."""
    ranked = _distinct(entry for record in records for entry in _ranked(record, mode))
    ranked.sort(key=_relevance)
    return RunAnnotations(shown=[item for _, item in ranked[:limit]], total=len(ranked))
