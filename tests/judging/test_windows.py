"""bot/judging/windows.py: groups split into parts a judge reads whole, long files into
windows at line boundaries, their diffs sliced to their lines."""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence

import pytest

from bot.github.types import added_lines_from_patch
from bot.judge.checks.injection import detect_task_injection
from bot.judge.checks.mechanical import run_mechanical_checks
from bot.judge.engine.prompts import CI_FAILING_EXCERPT, CI_LISTED, EARLIER_LIMIT
from bot.judge.engine.review_context import CiResult, EarlierVerdict, FileDiff
from bot.judge.records import JudgedFile, RubricName, TaskSpec
from bot.judging.diffs import unified
from bot.judging.windows import (
    DIFF_SHARE,
    PAD_SHARE,
    Part,
    context_reserve,
    diffs_first,
    file_windows,
    part_note,
    room_for,
    split_group,
)

ROOM = 29_000
_HEADER = re.compile(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@")


def prose(chars: int, *, seed: int = 1, width: int = 70) -> str:
    """Markdown prose of exactly `chars` characters, lines of about `width`."""
    rng = random.Random(seed)
    words = ["latency", "cache", "rollback", "measure", "the", "budget", "report", "a"]
    out: list[str] = []
    size = 0
    line = 0
    while size < chars:
        line += 1
        if line % 12 == 1:
            row = f"## Section {line}"
        elif line % 12 == 0:
            row = ""
        else:
            row = " ".join(rng.choice(words) for _ in range(rng.randint(3, width // 6)))
        out.append(row + "\n")
        size += len(row) + 1
    return "".join(out)[:chars]


def md(path: str, chars: int, **fields: object) -> JudgedFile:
    return JudgedFile(path=path, content=prose(chars, seed=len(path)), **fields)


def split(
    files: Sequence[JudgedFile],
    *,
    rubric: RubricName = RubricName.CONTENT,
    max_files: int = 50,
    room: int = ROOM,
    sensitive: frozenset[str] = frozenset(),
    diffs: dict[str, FileDiff] | None = None,
) -> list[Part]:
    return split_group(
        files, diffs or {}, rubric=rubric, max_files=max_files, room=room, sensitive=sensitive
    )


def unpadded(part: Part) -> str:
    """A window's own text: its content without the empty lines standing for earlier ones."""
    assert part.window is not None
    [file] = part.files
    pad = part.window.first - 1 if part.window.padded else 0
    assert file.content[:pad] == "\n" * pad
    return file.content[pad:]


def cost(part: Part, rubric: RubricName) -> int:
    text = sum(len(f.content) for f in part.files)
    return text + (sum(len(d.diff) for d in part.diffs) if diffs_first(rubric) else 0)


# -- batches ------------------------------------------------------------------------------------


def test_small_files_share_one_part_in_the_order_given() -> None:
    files = [md(f"docs/{n}.md", 2_000) for n in "edcba"]
    [part] = split(files)
    assert part.files == tuple(files)
    assert part.window is None


def test_at_most_max_files_per_part_and_every_file_once() -> None:
    files = [md(f"docs/{n}.md", 500) for n in range(7)]
    parts = split(files, max_files=3)
    assert [len(p.files) for p in parts] == [3, 3, 1]
    assert [f.path for p in parts for f in p.files] == [f.path for f in files]


def test_parts_fill_up_to_the_room() -> None:
    files = [md(f"docs/{n}.md", 6_000) for n in range(5)]
    parts = split(files, room=13_000)
    assert [len(p.files) for p in parts] == [2, 2, 1]
    assert all(cost(p, RubricName.CONTENT) <= 13_000 for p in parts)


def test_a_file_that_fits_exactly_is_not_windowed() -> None:
    [part] = split([md("docs/a.md", ROOM)])
    assert part.window is None


def test_first_fit_puts_a_small_file_beside_an_earlier_one() -> None:
    big, other, small = (
        md("docs/big.md", 20_000),
        md("docs/other.md", 20_000),
        md("docs/s.md", 9_000),
    )
    parts = split([big, other, small])
    assert [[f.path for f in p.files] for p in parts] == [
        ["docs/big.md", "docs/s.md"],
        ["docs/other.md"],
    ]


def test_sensitive_files_are_placed_first_and_keep_the_given_order_inside() -> None:
    files = [md(f"docs/{n}.md", 500) for n in "abcd"]
    parts = split(files, max_files=2, sensitive=frozenset({"docs/d.md", "docs/b.md"}))
    assert [[f.path for f in p.files] for p in parts] == [
        ["docs/b.md", "docs/d.md"],
        ["docs/a.md", "docs/c.md"],
    ]


def test_removed_files_cost_nothing_but_count_toward_max_files() -> None:
    gone = [JudgedFile(path=f"docs/{n}.md", content="x" * 50_000, status="removed") for n in "ab"]
    parts = split(gone, max_files=1)
    assert [len(p.files) for p in parts] == [1, 1]
    assert all(p.window is None for p in parts)


def test_code_rubric_counts_the_diffs_and_content_does_not() -> None:
    files = [JudgedFile(path=f"src/{n}.py", content="x = 1\n" * 1_700) for n in "ab"]
    diffs = {f.path: FileDiff(path=f.path, diff="+y\n" * 2_000) for f in files}
    # 10,200 + 6,000 each: both fit a content room of 29,000, not a code one.
    assert len(split(files, rubric=RubricName.CONTENT, diffs=diffs)) == 1
    code = split(files, rubric=RubricName.CODE, diffs=diffs)
    assert [len(p.files) for p in code] == [1, 1]
    assert all(p.diffs == (diffs[p.files[0].path],) for p in code)
    assert all(cost(p, RubricName.CODE) <= ROOM for p in code)


@pytest.mark.parametrize(
    ("rubric", "first"),
    [
        (RubricName.CODE, True),
        (RubricName.COMPLETION, True),
        (RubricName.CONTENT, False),
        (RubricName.RESEARCH, False),
    ],
)
def test_which_rubrics_keep_diffs_first(rubric: RubricName, first: bool) -> None:
    assert diffs_first(rubric) is first


# -- windows ------------------------------------------------------------------------------------


def assert_windows_cover(parts: Sequence[Part], content: str, room: int) -> None:
    """Every character of the file in exactly one window, in order, each within the room,
    each window's line numbers those of the file."""
    assert "".join(unpadded(p) for p in parts) == content
    lines = content.split("\n")
    for number, part in enumerate(parts, start=1):
        window = part.window
        assert window is not None
        assert (window.number, window.count) == (number, len(parts))
        assert len(part.files[0].content) <= room
        own = unpadded(part)
        if not window.partial:
            assert own.split("\n")[0] == lines[window.first - 1]
            assert own.count("\n") == window.last - window.first + own.endswith("\n")
    for before, after in itertools.pairwise(parts):
        assert before.window is not None and after.window is not None
        gap = after.window.first - before.window.last
        assert gap == (1 if unpadded(before).endswith("\n") else 0)


def test_a_100k_file_is_cut_at_line_boundaries_into_ordered_windows() -> None:
    file = md("docs/long.md", 100_000)
    parts = split([file])
    assert len(parts) == 4
    assert_windows_cover(parts, file.content, ROOM)
    assert all(not p.window.partial for p in parts if p.window)
    # Cut at line boundaries: every window but the last ends with its line's newline.
    assert all(unpadded(p).endswith("\n") for p in parts[:-1])
    covered = [n for p in parts if p.window for n in range(p.window.first, p.window.last + 1)]
    assert covered == list(range(1, file.content.count("\n") + 2))


def test_padded_windows_keep_the_files_line_numbers() -> None:
    file = md("docs/long.md", 100_000)
    for part in split([file]):
        assert part.window is not None and part.window.padded
        rows = part.files[0].content.split("\n")
        real = file.content.split("\n")
        for number in (part.window.first, part.window.last):
            assert rows[number - 1] == real[number - 1]


def test_a_mechanical_finding_in_a_late_window_names_the_real_line() -> None:
    lines = prose(90_000).split("\n")
    lines[1_100] = "FIX" + "ME: the rollback step"  # line 1101
    file = JudgedFile(path="docs/long.md", content="\n".join(lines), added_lines=[1_101])
    found = [
        finding
        for part in split([file])
        for finding in run_mechanical_checks(part.files)
        if finding.kind == "todo-marker"
    ]
    assert [(f.path, f.line) for f in found] == [("docs/long.md", 1_101)]


def test_added_lines_are_those_inside_the_window() -> None:
    file = md("docs/long.md", 100_000, added_lines=[1, 400, 401, 1_300])
    parts = split([file])
    inside = [p.files[0].added_lines for p in parts]
    assert sorted(n for lines in inside for n in lines or ()) == [1, 400, 401, 1_300]
    for part in parts:
        assert part.window is not None
        assert all(
            part.window.first <= n <= part.window.last for n in part.files[0].added_lines or ()
        )


def test_unknown_added_lines_stay_unknown() -> None:
    assert all(p.files[0].added_lines is None for p in split([md("docs/long.md", 60_000)]))


def test_a_file_of_many_short_lines_is_not_padded_and_its_lines_are_renumbered() -> None:
    content = "".join(f"{n % 10}\n" for n in range(40_000))  # 80,000 chars
    file = JudgedFile(path="docs/ticks.md", content=content, added_lines=[1, 20_000, 40_000])
    parts = split([file])
    assert ROOM // PAD_SHARE < 40_000
    assert all(p.window is not None and not p.window.padded for p in parts)
    assert_windows_cover(parts, content, ROOM)
    renumbered = {
        (p.window.first if p.window else 0) + n - 1
        for p in parts
        for n in p.files[0].added_lines or ()
    }
    assert renumbered == {1, 20_000, 40_000}


def test_a_line_longer_than_a_window_is_cut_hard() -> None:
    long_line = "x" * 70_000
    content = "# Title\n\nintro\n" + long_line + "\nafter\n"
    file = JudgedFile(path="docs/blob.md", content=content)
    parts = split([file])
    assert_windows_cover(parts, content, ROOM)
    # The short lines before it keep a window of their own rather than share one with
    # the long line's start.
    windows = [p.window for p in parts if p.window]
    assert [(w.first, w.last, w.partial) for w in windows] == [
        (1, 3, False),
        (4, 4, True),
        (4, 4, True),
        (4, 5, True),
    ]
    # The padding of the cut line's windows puts it at line 4, as in the file.
    assert all(p.files[0].content.split("\n")[3].startswith("x") for p in parts[1:])


def test_a_file_of_one_huge_line_without_newline() -> None:
    content = "y" * 100_001
    parts = split([JudgedFile(path="docs/y.md", content=content)])
    assert_windows_cover(parts, content, ROOM)
    assert [len(unpadded(p)) for p in parts] == [ROOM, ROOM, ROOM, 100_001 - 3 * ROOM]


@pytest.mark.parametrize("room", [50, 200, 1_000, 7_777])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_windows_cover_random_files_at_any_room(room: int, seed: int) -> None:
    rng = random.Random(seed)
    rows = ["z" * rng.choice([0, 1, 5, 80, 300, 2_500]) for _ in range(400)]
    content = "\n".join(rows) + ("\n" if seed % 2 else "")
    parts = file_windows(
        JudgedFile(path="docs/r.md", content=content), None, room=room, counted=False
    )
    assert_windows_cover(parts, content, room)


def test_windows_sit_after_the_batches_and_keep_their_path_and_status() -> None:
    small, long = md("docs/a.md", 1_000), md("docs/long.md", 40_000, status="modified")
    parts = split([long, small])
    assert parts[0].files == (small,)
    assert all(p.files[0].path == "docs/long.md" for p in parts[1:])
    assert all(p.files[0].status == "modified" for p in parts[1:])


# -- the diffs of windows -----------------------------------------------------------------------


def edited(base: str, lines: Sequence[int]) -> str:
    rows = base.split("\n")
    for number in lines:
        rows[number - 1] = rows[number - 1] + " (edited)"
    return "\n".join(rows)


@pytest.mark.parametrize("rubric", [RubricName.CODE, RubricName.CONTENT])
def test_each_window_gets_only_the_hunks_of_its_lines(rubric: RubricName) -> None:
    base = prose(100_000)
    head = edited(base, [3, 600, 601, 1_200])
    diff = unified(base, head)
    assert diff is not None
    file = JudgedFile(path="docs/long.md", content=head, added_lines=added_lines_from_patch(diff))
    parts = split([file], rubric=rubric, diffs={file.path: FileDiff(path=file.path, diff=diff)})
    assert len(parts) > 1
    added: list[int] = []
    for part in parts:
        assert part.window is not None
        for window_diff in part.diffs:
            assert "only the hunks of lines" in window_diff.note
            rows = added_lines_from_patch(window_diff.diff) or []
            assert all(part.window.first <= n <= part.window.last for n in rows)
            added += rows
            for header in filter(None, map(_HEADER.match, window_diff.diff.split("\n"))):
                assert part.window.first <= int(header[3]) <= part.window.last
        assert cost(part, rubric) <= ROOM
    assert sorted(added) == added_lines_from_patch(diff)


def test_a_window_diff_header_counts_its_rows() -> None:
    base = prose(60_000)
    head = edited(base, [5, 6, 7])
    diff = unified(base, head)
    assert diff is not None
    file = JudgedFile(path="src/long.py", content=head)
    parts = split(
        [file], rubric=RubricName.CODE, diffs={file.path: FileDiff(path=file.path, diff=diff)}
    )
    [first_diff] = parts[0].diffs
    rows = first_diff.diff.split("\n")
    header = _HEADER.match(rows[0])
    assert header is not None
    body = rows[1:]
    assert int(header[2]) == sum(r[:1] in (" ", "-") for r in body)
    assert int(header[4]) == sum(r[:1] in (" ", "+") for r in body)
    assert all(not p.diffs for p in parts[1:])


def test_a_diff_that_is_not_hunks_goes_to_the_first_window() -> None:
    file = md("docs/long.md", 70_000)
    odd = FileDiff(path=file.path, diff="Binary files differ\nsomething else", note="odd")
    parts = split([file], diffs={file.path: odd})
    assert parts[0].diffs[0].diff == odd.diff
    assert parts[0].diffs[0].note.startswith("odd; ")
    assert all(not p.diffs for p in parts[1:])


def test_a_diff_with_only_a_note_goes_with_every_window() -> None:
    file = md("docs/long.md", 70_000)
    note = FileDiff(path=file.path, note="too large to diff here; judged on the full file")
    parts = split([file], diffs={file.path: note})
    assert all(p.diffs == (note,) for p in parts)


def test_a_huge_diff_takes_at_most_half_a_code_window() -> None:
    # A 60,000-character deletion just before line 5 of a file that would fit alone.
    head = "".join(f"line {n}\n" for n in range(1, 2_000))
    diff = "@@ -1,5 +1,4 @@\n line 1\n line 2\n line 3\n line 4\n" + "-" + "q" * 60_000
    file = JudgedFile(path="src/a.py", content=head)
    parts = split(
        [file], rubric=RubricName.CODE, diffs={file.path: FileDiff(path=file.path, diff=diff)}
    )
    assert "".join(unpadded(p) for p in parts) == head
    cut = [d for p in parts for d in p.diffs]
    assert len(cut) == 1
    assert len(cut[0].diff) <= ROOM // DIFF_SHARE
    assert "cut to leave room" in cut[0].note
    assert all(cost(p, RubricName.CODE) <= ROOM for p in parts)


def test_a_code_window_leaves_room_for_its_diff() -> None:
    base = "".join(f"value_{n} = {n}\n" for n in range(6_000))
    head = edited(base, list(range(1, 6_000, 2)))  # every other line edited: a huge diff
    diff = unified(base, head)
    assert diff is not None
    file = JudgedFile(path="src/values.py", content=head)
    diffs = {file.path: FileDiff(path=file.path, diff=diff)}
    parts = split([file], rubric=RubricName.CODE, diffs=diffs)
    assert "".join(unpadded(p) for p in parts) == head
    assert all(cost(p, RubricName.CODE) <= ROOM for p in parts)
    assert all(p.diffs for p in parts)
    content_parts = split([file], rubric=RubricName.CONTENT, diffs=diffs)
    assert len(content_parts) < len(parts)


# -- the reserve and the notes ------------------------------------------------------------------


def test_the_reserve_counts_earlier_verdicts_ci_lines_and_red_excerpts() -> None:
    earlier = [EarlierVerdict(head_sha="e" * 40, decision="improve", findings=["x"])]
    green = CiResult(name="lint", state="success", excerpt="ok " * 500)
    red = CiResult(name="tests", state="failure", required=True, excerpt="E" * 1_000)
    assert context_reserve([], []) == 0
    assert context_reserve([], earlier) == EARLIER_LIMIT
    assert context_reserve([green], []) == len("lint: success") + 1
    expected = len("tests: failure (required)") + 1 + CI_FAILING_EXCERPT
    assert context_reserve([red], []) == expected


def test_the_reserve_counts_only_as_many_results_as_a_prompt_lists() -> None:
    many = [CiResult(name=f"check-{n:03}", state="success") for n in range(CI_LISTED + 10)]
    assert context_reserve(many, []) == CI_LISTED * (len("check-000: success") + 1)


def test_the_room_never_drops_below_a_quarter_of_the_budget() -> None:
    assert room_for(32_000, 2_000) == 30_000
    assert room_for(32_000, 31_000) == 8_000


def test_notes_say_which_part_and_which_lines() -> None:
    file = md("docs/long.md", 100_000)
    parts = split([md("docs/a.md", 100), file])
    assert part_note(parts[0], 1, 5, 2, RubricName.CONTENT).startswith(
        "This request holds 1 of the 2 files judged by the content rubric (request 1 of 5)"
    )
    window = parts[2].window
    assert window is not None
    note = part_note(parts[2], 3, 5, 2, RubricName.CONTENT)
    assert f"lines {window.first}-{window.last} of docs/long.md (window 2 of 4" in note
    assert f"Lines 1-{window.first - 1} are left empty" in note
    assert "left empty" not in part_note(parts[1], 2, 5, 2, RubricName.CONTENT)
    assert part_note(Part(parts[0].files, ()), 1, 1, 1, RubricName.CONTENT) == ""


def test_notes_of_cut_lines_and_unpadded_windows() -> None:
    cut = split([JudgedFile(path="docs/y.md", content="y" * 70_000)])
    assert "line 1 (a line longer than one window" in part_note(cut[1], 2, 3, 1, RubricName.CONTENT)
    ticks = split([JudgedFile(path="docs/t.md", content="1\n" * 40_000)])
    second = ticks[1].window
    assert second is not None and not second.padded
    note = part_note(ticks[1], 2, len(ticks), 1, RubricName.CONTENT)
    assert f"Its first line here is line {second.first} of the file" in note


def test_notes_are_not_taken_for_an_injection() -> None:
    file = md("docs/long.md", 100_000)
    parts = split([md("docs/a.md", 100), file])
    notes = [part_note(p, n, len(parts), 2, RubricName.CODE) for n, p in enumerate(parts, 1)]
    notes.append(
        part_note(
            split([JudgedFile(path="docs/y.md", content="y" * 70_000)])[1],
            2,
            3,
            1,
            RubricName.CONTENT,
        )
    )
    assert detect_task_injection(TaskSpec(task_id="t", directives=notes)) == []
