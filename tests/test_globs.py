"""Glob semantics (`bot/globs.py`): the paths each pattern matches by gitignore's rules,
the patterns refused as errors, and the first-match rule."""

from __future__ import annotations

import re

import pytest

from bot.globs import GlobError, compile_glob, first_match, glob_match

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
