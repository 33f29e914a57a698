"""Glob semantics (`bot/globs.py`): the paths each pattern matches by gitignore's rules,
the patterns refused as errors, and the first-match rule; matching in linear time on
hostile input, checked against the old regex translation kept here as the reference, and
the limits on a glob's size."""

from __future__ import annotations

import itertools
import random
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pytest

from bot.globs import Glob, GlobError, check_glob, compile_glob, first_match, glob_match

ROOT = Path(__file__).resolve().parent.parent

GLOB_CASES: list[tuple[str, str, bool]] = [
    # exact names: a slash-less name matches at any depth, a slashed one is anchored
    ("README.md", "README.md", True),
    ("README.md", "docs/README.md", True),
    ("README.md", "README.mdx", False),
    ("README.md", "xREADME.md", False),
    ("docs/README.md", "docs/README.md", True),
    ("docs/README.md", "a/docs/README.md", False),
    ("/README.md", "README.md", True),
    ("/README.md", "docs/README.md", False),
    # * stays inside one segment
    ("*.md", "a.md", True),
    ("*.md", "x/y/a.md", True),
    ("*.md", "a.mdx", False),
    ("docs/*.md", "docs/a.md", True),
    ("docs/*.md", "docs/x/a.md", False),
    ("docs/*", "docs/a", True),
    ("docs/*", "docs/a/b", False),
    ("docs/*", "docs/", True),
    ("docs/a*", "docs/a", True),
    ("docs/a*b", "docs/a/b", False),
    # ? is one character, never /
    ("doc?/a.md", "docs/a.md", True),
    ("doc?/a.md", "doc/a.md", False),
    ("a?b", "a/b", False),
    # ** at the start
    ("**/a.md", "a.md", True),
    ("**/a.md", "x/a.md", True),
    ("**/a.md", "x/y/z/a.md", True),
    ("**/a.md", "xa.md", False),
    ("**/*.md", "deep/er/file.md", True),
    ("**/docs/*.md", "docs/a.md", True),
    ("**/docs/*.md", "p/docs/a.md", True),
    ("**/docs/*.md", "p/docs/x/a.md", False),
    # ** in the middle
    ("research/**/*.md", "research/a.md", True),
    ("research/**/*.md", "research/x/a.md", True),
    ("research/**/*.md", "research/x/y/a.md", True),
    ("research/**/*.md", "research.md", False),
    ("research/**/*.md", "researchx/a.md", False),
    ("research/**/*.md", "other/research/a.md", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "a/xb", False),
    ("a/**/**/b", "a/b", True),
    # ** at the end: everything inside, not the directory itself
    ("docs/**", "docs/a", True),
    ("docs/**", "docs/a/b/c.md", True),
    ("docs/**", "docs", False),
    ("docs/**", "docsx/a", False),
    ("**", "anything/at/all.txt", True),
    ("**", ".hidden", True),
    # a trailing slash means everything inside
    ("docs/", "docs/a.md", True),
    ("docs/", "docs/x/a.md", True),
    ("docs/", "docs", False),
    ("build/", "pkg/build/out.js", True),
    # ** inside a segment is a plain *
    ("a**b", "axxb", True),
    ("x/a**b", "x/a/b", False),
    ("**.md", "x/y.md", True),
    # dotfiles and dot-directories are matched by wildcards
    ("*", ".env", True),
    ("*.md", ".notes.md", True),
    (".github/**", ".github/workflows/ci.yml", True),
    ("**/*.yml", ".github/workflows/ci.yml", True),
    ("docs/*", "docs/.hidden", True),
    (".env", "config/.env", True),
    # character classes never match /
    ("[ab].md", "a.md", True),
    ("[ab].md", "c.md", False),
    ("[!ab].md", "c.md", True),
    ("[!ab].md", "a.md", False),
    ("[^ab].md", "c.md", True),
    ("v[0-9].md", "v7.md", True),
    ("v[0-9].md", "vx.md", False),
    ("a[!x]b", "a/b", False),
    ("a[+-0]b", "a/b", False),
    ("a[+-0]b", "a.b", True),
    ("[]]", "]", True),
    ("[a-]", "-", True),
    # escapes and regex metacharacters are literal
    ("a\\*b", "a*b", True),
    ("a\\*b", "axb", False),
    ("file(1).md", "file(1).md", True),
    ("a+b.md", "a+b.md", True),
    ("a.md", "aXmd", False),
    ("$x^.md", "$x^.md", True),
    # case-sensitive, like git
    ("*.MD", "a.md", False),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), GLOB_CASES)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    """Each pattern matches exactly the paths gitignore's rules say it does."""
    assert glob_match(pattern, path) is expected


BAD_GLOBS: list[tuple[str, str]] = [
    ("", "empty"),
    ("/", "besides '/'"),
    ("a//b", "empty path segment"),
    ("./a", "'.' segment"),
    ("a/../b", "'..' segment"),
    ("!a.md", "negation"),
    ("a[bc", "unclosed"),
    ("[z-a]", "invalid character class"),
    ("a\\", "lone backslash"),
]


@pytest.mark.parametrize(("pattern", "fragment"), BAD_GLOBS)
def test_bad_globs_are_refused(pattern: str, fragment: str) -> None:
    """A glob that could never mean what was intended is an error, not a silent no-match."""
    with pytest.raises(GlobError, match=re.escape(fragment)):
        compile_glob(pattern)


def test_first_match_is_in_order() -> None:
    """The first pattern that matches is returned, not the most specific one."""
    assert first_match(["**", "docs/*.md"], "docs/a.md") == "**"
    assert first_match(["docs/*.md", "**"], "docs/a.md") == "docs/*.md"
    assert first_match(["*.py"], "docs/a.md") is None


# Hostile input: matching must stay linear in the path whatever the pattern and path. The
# old regex translation backtracked for tens of seconds or far longer on every case here
# that does not match; the ones that do keep the answer honest.

HOSTILE_CASES: list[tuple[str, str, bool]] = [
    ("*a*a*a*a*a*a*a*a*a*a*b", "a" * 60, False),
    ("*a*a*a*a*a*a*a*a*a*a*b", "a" * 60 + "b", True),
    ("*a*a*a*a*a*a*a*a*a*a*b", "x/" + "a" * 60, False),
    ("**/**/**/**/**/**/**/**/**/**/x", "a/" * 39 + "b", False),
    ("**/**/**/**/**/**/**/**/**/**/x", "a/" * 39 + "x", True),
    ("**/a/" * 10 + "b", "a/" * 40 + "c", False),
    ("**/a/" * 10 + "b", "a/" * 40 + "b", True),
    ("*[ab]*[ab]*[ab]*[ab]*[ab]*[ab]*[ab]*[ab]*[ab]*c", "ab" * 40, False),
    # Names matched in many ways each, one after another.
    ("*a*a*a*a*a*/*a*a*a*a*a*/b", ("a" * 30 + "/") * 2 + "c", False),
    ("**/" + "*a*a*a*a*/" * 3 + "b", ("a" * 16 + "/") * 20 + "c", False),
    # The limits' worst case: as many wildcards as allowed, a path far longer than git's.
    ("*a" * 63 + "*b", "a" * 4000, False),
    ("**/a/" * 31 + "b", "a/" * 2000 + "c", False),
    ("**/" + "*a*a*a*/" * 15 + "b", ("a" * 100 + "/") * 40 + "c", False),
]

# Run in a child process so the old matcher's runaway backtracking is cut off by a timeout
# instead of holding this process (a regex cannot be interrupted from another thread).
_HOSTILE_CHILD = """
import sys, time
from bot.globs import glob_match
pattern, path = sys.argv[1], sys.argv[2]
started = time.perf_counter()
matched = glob_match(pattern, path)
print(matched, time.perf_counter() - started)
"""


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    HOSTILE_CASES,
    ids=[f"{p[:24]}-{len(path)}chars-{e}" for p, path, e in HOSTILE_CASES],
)
def test_hostile_globs_match_in_linear_time(pattern: str, path: str, expected: bool) -> None:
    """A pattern and a path built to make a backtracking matcher explode answer at once."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _HOSTILE_CHILD, pattern, path],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"matching {pattern!r} ran for more than 30 s")
    matched, seconds = done.stdout.split()
    assert matched == str(expected)
    # Generous: a linear matcher takes milliseconds, the old one took tens of seconds.
    assert float(seconds) < 2.0


# The old translation of a glob into one regex, kept verbatim as the reference the new
# matcher must agree with: its semantics were right, only its running time was not.


@lru_cache(maxsize=1024)
def _legacy_compile(pattern: str) -> re.Pattern[str]:
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
        return re.compile(_legacy_translate_segments(segments), re.DOTALL)
    except re.error as exc:
        raise GlobError(f"a glob has an invalid character class ({exc.msg})") from exc


def _legacy_translate_segments(segments: list[str]) -> str:
    out: list[str] = []
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        if segment == "**":
            out.append(".+" if i == last else "(?:[^/]+/)*")
        else:
            out.append(_legacy_translate_segment(segment))
            if i != last:
                out.append("/")
    return "".join(out)


def _legacy_translate_segment(segment: str) -> str:
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
            cls, i = _legacy_translate_class(segment, i)
            out.append(cls)
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _legacy_translate_class(segment: str, start: int) -> tuple[str, int]:
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
    return f"(?!/)[{body}]", i


def legacy_match(pattern: str, path: str) -> bool:
    """The old matcher: one backtracking regex per glob (for tests and the benchmark)."""
    return _legacy_compile(pattern).fullmatch(path) is not None


# Pieces of random globs: every kind of token, plus the ones that make a glob invalid.
_LITERALS = ["a", "b", "ab", ".", "-", "\\*", "\\a", "\\["]
_WILDCARDS = ["*", "**", "?"]
_CLASSES = ["[ab]", "[!a]", "[^b]", "[a-b]", "[]a]", "[a-]", "[+-0]", "[+--.]", "[!]]"]
_FAULTS = ["[", "[b-a]", "[a--b]", "\\"]
_PIECES = _LITERALS + _WILDCARDS + _CLASSES
_NAMES = ["", "a", "b", "ab", "ba", "aab", "bab", ".", "-", "*", "]", "[", "+", "/"]


def _random_glob(rng: random.Random) -> str:
    segments = [
        "**" if rng.random() < 0.25 else "".join(rng.choices(_PIECES, k=rng.randint(1, 4)))
        for _ in range(rng.randint(1, 4))
    ]
    if rng.random() < 0.15:
        segments[rng.randrange(len(segments))] += rng.choice(_FAULTS)
    glob = "/".join(segments)
    if rng.random() < 0.2:
        glob = "/" + glob
    if rng.random() < 0.2:
        glob += "/"
    return glob


def _random_path(rng: random.Random) -> str:
    # Names may be empty or odd: the semantics hold for any string, not only git's paths.
    return "/".join(rng.choices(_NAMES, k=rng.randint(1, 6)))


def _small_paths() -> list[str]:
    """Every string of up to 4 characters over 'a', 'b' and '/'."""
    paths = [""]
    for length in range(1, 5):
        paths += ["".join(p) for p in itertools.product("ab/", repeat=length)]
    return paths


def _outcome(match: Callable[[str, str], bool], pattern: str, paths: list[str]) -> list[bool] | str:
    """The matches of `pattern` on `paths`, or the message `pattern` is refused with."""
    try:
        return [match(pattern, path) for path in paths]
    except GlobError as exc:
        return f"GlobError: {exc}"


def _walk_match(pattern: str, path: str) -> bool:
    """The matcher's walk over names, even where it would use the glob's single regex."""
    return Glob(compile_glob(pattern).steps, whole=None).match(path)


def test_matcher_agrees_with_the_old_regex_translation() -> None:
    """On thousands of random globs and paths the new matcher answers as the old regex
    did: the same matches, and the same refusals with the same messages. Both its ways
    are checked: one regex (globs with at most one inner `**`) and the walk (any glob)."""
    rng = random.Random(20240607)
    small = _small_paths()
    patterns = [*(p for p, _, _ in GLOB_CASES), *(p for p, _ in BAD_GLOBS)]
    patterns += [_random_glob(rng) for _ in range(3000)]
    valid = walked = matches = 0
    with warnings.catch_warnings():
        # Python warns about some class spellings ('[a--b]'); both sides compile the same text.
        warnings.simplefilter("ignore", FutureWarning)
        for pattern in patterns:
            paths = small + [_random_path(rng) for _ in range(40)]
            expected = _outcome(legacy_match, pattern, paths)
            assert _outcome(glob_match, pattern, paths) == expected, pattern
            assert _outcome(_walk_match, pattern, paths) == expected, pattern
            if isinstance(expected, list):
                valid += 1
                walked += compile_glob(pattern).whole is None
                matches += sum(expected)
    # The random globs exercise matching, not only refusals, and match often enough to count.
    assert valid > 2000
    assert walked > 100
    assert matches > 30_000


# Complexity limits: refused when the config is validated, far above any real glob.


def test_globs_at_the_limits_are_accepted() -> None:
    """A glob of 1,000 characters, 64 segments or 64 wildcards is still a glob."""
    assert check_glob("a" * 1000) == "a" * 1000
    assert check_glob("/".join(["a"] * 64)) == "/".join(["a"] * 64)
    assert check_glob("*a" * 63 + "*") == "*a" * 63 + "*"
    assert check_glob("/".join(["**"] * 32 + ["[ab]?"] * 16)) != ""


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("a" * 1001, "at most 1,000 characters"),
        ("/".join(["a"] * 65), "at most 64 path segments"),
        ("*a" * 64 + "*", "at most 64 wildcards"),
        ("?" * 65, "at most 64 wildcards"),
        ("[ab]" * 65, "at most 64 wildcards"),
        ("/".join(["**"] * 33 + ["[ab]?"] * 16), "at most 64 wildcards"),
    ],
)
def test_unreasonably_complex_globs_are_refused(pattern: str, fragment: str) -> None:
    """Validation refuses a glob too long or too intricate for any real config."""
    with pytest.raises(GlobError, match=re.escape(fragment)):
        check_glob(pattern)
