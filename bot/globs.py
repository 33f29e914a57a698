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
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


class GlobError(ValueError):
    """A pattern that cannot be compiled; the message says why."""


def check_glob(pattern: str) -> str:
    """Return `pattern` if it compiles, else raise `GlobError`."""
    compile_glob(pattern)
    return pattern


def glob_match(pattern: str, path: str) -> bool:
    return compile_glob(pattern).fullmatch(path) is not None


def match_any(patterns: Iterable[str], path: str) -> bool:
    return any(glob_match(p, path) for p in patterns)


def first_match(patterns: Iterable[str], path: str) -> str | None:
    for pattern in patterns:
        if glob_match(pattern, path):
            return pattern
    return None


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise GlobError("a glob cannot be empty")
    if pattern.startswith("!"):
        raise GlobError("negation with '!' is not supported; list the path under exclude instead")
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
    if inside_dir:
        segments.append("**")
    if not anchored:
        segments.insert(0, "**")
    try:
        return re.compile(_translate_segments(segments), re.DOTALL)
    except re.error as exc:
        # Only a character class can yield an invalid regex, e.g. the range [z-a].
        raise GlobError(f"a glob has an invalid character class ({exc.msg})") from exc


def _translate_segments(segments: list[str]) -> str:
    out: list[str] = []
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        if segment == "**":
            # Zero or more whole directories before the next segment; at the end,
            # one or more path components (everything inside, not the directory).
            out.append(".+" if i == last else "(?:[^/]+/)*")
        else:
            out.append(_translate_segment(segment))
            if i != last:
                out.append("/")
    return "".join(out)


def _translate_segment(segment: str) -> str:
    out: list[str] = []
    i = 0
    n = len(segment)
    while i < n:
        c = segment[i]
        if c == "*":
            while i < n and segment[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "\\":
            if i + 1 == n:
                raise GlobError("a glob cannot end with a lone backslash")
            i += 1
            out.append(re.escape(segment[i]))
        elif c == "[":
            cls, i = _translate_class(segment, i)
            out.append(cls)
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


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
