"""Gitignore-like globs over repository-relative POSIX paths.

`fnmatch` lets `*` cross `/` and has no `**`, so `docs/*.md` would match
`docs/a/b.md` and `**/` could not mean "any directories". The rules here are
gitignore's, minus negation:

* `*` matches any run of characters except `/`; `?` one character except `/`;
  `[abc]`, `[a-z]`, `[!a-z]` (or `[^a-z]`) one character of a class, never `/`.
  A backslash makes the next character literal.
* `**` as a whole path segment crosses directories: `**/x` matches `x` at any
  depth (including the top), `a/**/b` matches `a/b`, `a/x/b`, `a/x/y/b`, and
  `a/**` matches everything inside `a` (not `a` itself). `**` inside a segment
  (`a**b`) is an ordinary `*`.
* A pattern with no `/` except a trailing one matches a name at any depth
  (`*.md`, `SECURITY.md`); any other pattern is anchored at the repository
  root. A leading `/` only anchors (`/README.md` is the top-level file).
* A trailing `/` matches everything inside a directory (`docs/` = `docs/**`).
* Wildcards match dotfiles and dot-directories (`*` matches `.env`).
* Matching is case-sensitive, as paths in git are.

Paths are matched as given: repo-relative, `/`-separated, no leading `/`.

Matching time is linear in the path's length times the pattern's size, whatever
both are: the PR author chooses the paths, and the one backtracking regex per
glob this module used to build ran for minutes on `*a*a*a*a*a*a*a*a*a*a*b` or
`**/` ten times over, against a path made for it. Three rules keep it linear:

* Inside one name, each run of characters between two `*`s takes its leftmost
  place for good (an atomic group): a match with the run further right still
  matches with it there, since the next `*` absorbs the difference. Only the
  last `*` of a name searches, for where the name's tail begins.
* A segment takes a whole name, up to the next '/', so once it has matched, no
  other way it could match that name is tried (an atomic group too).
* What remains is where each `**` stops. With at most one `**` before the end
  (a final `**` stops only at the end), the glob is one regex: each place it
  stops lets each later segment try one name. With more, the path is cut into
  its names and walked through the segments, keeping every name index reached
  so far: all the ways the `**`s can share the names are followed at once,
  never one after another.

`check_glob`, which validates `.github/judge.yml`, also refuses globs far more
complex than any real config needs: more than 1,000 characters, more than 64
path segments, or more than 64 wildcards (each run of `*`, each `**` segment,
`?` and `[...]` counts one).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

MAX_GLOB_CHARS = 1000
MAX_GLOB_SEGMENTS = 64
MAX_GLOB_WILDCARDS = 64


class GlobError(ValueError):
    """A pattern that cannot be compiled; the message says why."""


class _Span(enum.Enum):
    """A `**` segment: what it spans depends on whether the glob goes on after it."""

    DIRS = "zero or more non-empty names, each with the '/' after it"
    REST = "one or more characters of anything, '/' included (the glob's last segment)"


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled glob: a path's names go through `steps` left to right. A regex step
    takes one whole name and, unless it is the last step, the '/' after it. `whole` is
    the same glob as one regex, kept only when at most one `**` precedes the end."""

    steps: tuple[re.Pattern[str] | _Span, ...]
    whole: re.Pattern[str] | None

    def match(self, path: str) -> bool:
        if self.whole is not None:
            return self.whole.fullmatch(path) is not None
        return _walk(self.steps, path.split("/"))


def check_glob(pattern: str) -> str:
    """Return `pattern` if it compiles, else raise `GlobError`."""
    compile_glob(pattern)
    return pattern


def glob_match(pattern: str, path: str) -> bool:
    return compile_glob(pattern).match(path)


def match_any(patterns: Iterable[str], path: str) -> bool:
    return any(glob_match(p, path) for p in patterns)


def first_match(patterns: Iterable[str], path: str) -> str | None:
    for pattern in patterns:
        if glob_match(pattern, path):
            return pattern
    return None


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> Glob:
    segments, anchored, inside_dir = _segments(pattern)
    runs = _translate_segments(segments)
    # The `**` a glob implies: a slash-less glob is looked for at any depth, and a
    # trailing '/' means everything inside.
    if inside_dir:
        runs.append(None)
    if not anchored:
        runs.insert(0, None)
    last = len(runs) - 1
    parts = [
        (_Span.REST if i == last else _Span.DIRS)
        if segment_runs is None
        else _segment_regex(segment_runs)
        for i, segment_runs in enumerate(runs)
    ]
    try:
        steps = tuple(p if isinstance(p, _Span) else re.compile(p, re.DOTALL) for p in parts)
        whole = _whole_regex(parts)
    except re.error as exc:
        # Only a character class can yield an invalid regex, e.g. the range [z-a].
        raise GlobError(f"a glob has an invalid character class ({exc.msg})") from exc
    return Glob(steps, whole)


def _whole_regex(parts: list[str | _Span]) -> re.Pattern[str] | None:
    """The glob as one regex, faster than the walk, when it is linear too; else None.

    Each segment but the last is an atomic group: every way it matches a name ends at
    the same '/', so committing to the first loses nothing, and a later failure never
    retries the others. What remains to backtrack is where a DIRS stops (REST stops only
    at the end). With one DIRS, each place it stops makes each later segment try one
    name: a name is tried at most once per segment. Two DIRS multiply their places.
    """
    if parts.count(_Span.DIRS) > 1:
        return None
    last = len(parts) - 1
    pieces: list[str] = []
    for i, part in enumerate(parts):
        if part is _Span.DIRS:
            pieces.append("(?:[^/]+/)*")
        elif part is _Span.REST:
            pieces.append(".+")
        else:
            pieces.append(part if i == last else f"(?>{part}/)")
    return re.compile("".join(pieces), re.DOTALL)


def _segments(pattern: str) -> tuple[list[str], bool, bool]:
    """The segments written, whether the glob is anchored, whether it ends with '/'."""
    if not pattern:
        raise GlobError("a glob cannot be empty")
    if pattern.startswith("!"):
        raise GlobError("negation with '!' is not supported; list the path under exclude instead")
    if len(pattern) > MAX_GLOB_CHARS:
        raise GlobError(
            f"a glob can be at most {MAX_GLOB_CHARS:,} characters long, "
            f"this one has {len(pattern):,}"
        )
    body = pattern
    inside_dir = body.endswith("/")
    if inside_dir:
        body = body[:-1]
    anchored = body.startswith("/") or "/" in body
    body = body.removeprefix("/")
    if not body:
        raise GlobError("a glob must name something besides '/'")
    segments = body.split("/")
    for segment in segments:
        if segment == "":
            raise GlobError("a glob cannot contain an empty path segment ('//')")
        if segment in (".", ".."):
            raise GlobError(f"a glob cannot contain a '{segment}' segment; paths are normalised")
    if len(segments) > MAX_GLOB_SEGMENTS:
        raise GlobError(
            f"a glob can have at most {MAX_GLOB_SEGMENTS} path segments, "
            f"this one has {len(segments)}"
        )
    return segments, anchored, inside_dir


def _translate_segments(segments: list[str]) -> list[list[str] | None]:
    """Each segment's runs between `*`s (see `_translate_segment`), None for `**`."""
    # Every segment is translated before any is compiled, so a glob with several faults
    # is refused for the same one as ever.
    runs: list[list[str] | None] = []
    wildcards = 0
    for segment in segments:
        if segment == "**":
            runs.append(None)
            wildcards += 1
        else:
            segment_runs, segment_wildcards = _translate_segment(segment)
            runs.append(segment_runs)
            wildcards += segment_wildcards
    if wildcards > MAX_GLOB_WILDCARDS:
        raise GlobError(
            f"a glob can have at most {MAX_GLOB_WILDCARDS} wildcards ('*', '**', '?', "
            f"'[...]'), this one has {wildcards}"
        )
    return runs


def _walk(steps: tuple[re.Pattern[str] | _Span, ...], names: list[str]) -> bool:
    # `starts` holds, in ascending order, every name index the steps so far can end
    # before; all of them are kept, which is what makes the walk linear.
    end = len(names) - 1
    starts = [0]
    for step in steps[:-1]:
        if isinstance(step, _Span):  # only the last step can be REST
            starts = _descend(starts, names, end)
        else:
            starts = [j + 1 for j in starts if j < end and step.fullmatch(names[j])]
        if not starts:
            return False
    final = steps[-1]
    if isinstance(final, _Span):  # REST: the rest of the path, if it is not empty
        return starts[0] < end or names[end] != ""
    return starts[-1] == end and final.fullmatch(names[end]) is not None


def _descend(starts: list[int], names: list[str], end: int) -> list[int]:
    """Every index reachable from `starts` across zero or more whole directories: each
    crossing takes a non-empty name and the '/' after it, so never the final name."""
    reached: list[int] = []
    for j in starts:
        if reached and j <= reached[-1]:
            # Reached from an earlier start, and so is everything it leads to.
            continue
        reached.append(j)
        while j < end and names[j]:
            j += 1
            reached.append(j)
    return reached


def _segment_regex(runs: list[str]) -> str:
    """One name's regex from the regexes of its runs between `*`s (at least one run)."""
    if len(runs) == 1:
        return runs[0]
    head, *middle, tail = runs
    # A run between two `*`s takes its leftmost place for good (see the module
    # docstring): an atomic group, so a failed tail never retries the runs before it.
    placed = "".join(f"(?>[^/]*?{run})" for run in middle)
    return f"{head}{placed}[^/]*{tail}"


def _translate_segment(segment: str) -> tuple[list[str], int]:
    """The regexes of the runs between the `*`s of `segment` (n runs of `*` make n + 1,
    some maybe empty), and how many wildcards it has."""
    runs: list[list[str]] = [[]]
    wildcards = 0
    i = 0
    n = len(segment)
    while i < n:
        c = segment[i]
        if c == "*":
            while i < n and segment[i] == "*":
                i += 1
            runs.append([])
            wildcards += 1
            continue
        if c == "?":
            runs[-1].append("[^/]")
            wildcards += 1
        elif c == "\\":
            if i + 1 == n:
                raise GlobError("a glob cannot end with a lone backslash")
            i += 1
            runs[-1].append(re.escape(segment[i]))
        elif c == "[":
            cls, i = _translate_class(segment, i)
            runs[-1].append(cls)
            wildcards += 1
            continue
        else:
            runs[-1].append(re.escape(c))
        i += 1
    return ["".join(run) for run in runs], wildcards


def _translate_class(segment: str, start: int) -> tuple[str, int]:
    """Translate the class opening at `start`; return it and the index after `]`."""
    i = start + 1
    n = len(segment)
    negate = i < n and segment[i] in "!^"
    if negate:
        i += 1
    members: list[str] = []
    first = True
    while True:
        if i >= n:
            raise GlobError("a glob has an unclosed character class '['")
        c = segment[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "\\" and i + 1 < n:
            i += 1
            members.append(re.escape(segment[i]))
        elif c == "-" and members and i + 1 < n and segment[i + 1] != "]":
            members.append("-")
        else:
            members.append(re.escape(c))
        i += 1
    body = "".join(members)
    if negate:
        return f"[^/{body}]", i
    # A positive class that spans '/' (e.g. [+-0]) must still never match it.
    return f"(?!/)[{body}]", i
