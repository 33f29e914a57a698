"""Reading Markdown for the link checks (`bot/judge/checks/markdown.py`): GitHub's heading
slugs, the anchors a file defines, and every link form it contains."""

from __future__ import annotations

import pytest

from bot.judge.checks.markdown import anchors, links, shown_lines, slug, unfenced_lines


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Hello, World!", "hello-world"),
        ("A & B", "a--b"),
        ("Version 2.0 (beta)", "version-20-beta"),
        ("snake_case_name", "snake_case_name"),
        ("Café Ünïcode", "café-ünïcode"),
        ("Rocket 🚀 launch", "rocket--launch"),
        ("  Trim  ", "trim"),
        ("Über-cool  double", "über-cool--double"),
    ],
)
def test_github_slug(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_anchors_from_headings_markup_duplicates_and_html() -> None:
    text = (
        "---\ntitle: front matter\n---\n"
        "# Title\n"
        "## `__init__` and **bold** _em_ [link](x.md)\n"
        "## Title\n"
        "## Title-1\n"
        "## Title\n"
        "Setext One\n==========\n"
        "Setext Two\n----------\n"
        "### Closed heading ###\n"
        '<a name="Custom-Anchor"></a>\n<div id="box"></div>\n'
        "```\n# not a heading\n```\n"
        "#no-space is not a heading\n"
    )
    found = anchors(text)
    assert found == {
        "title",
        "__init__-and-bold-em-link",
        "title-1",
        "title-1-1",
        "title-2",
        "setext-one",
        "setext-two",
        "closed-heading",
        "custom-anchor",
        "box",
    }


def test_link_extraction_forms() -> None:
    text = (
        '[a](one.md "title") ![img](pic.png) [b](<two words.md>)\n'
        "[ref]: three.md\n"
        '<a href="four.md">x</a> <img src="five.png">\n'
        "[nested [brackets]](six.md) [p](seven_(v2).md)\n"
    )
    assert [(x.line, x.target) for x in links(text)] == [
        (1, "one.md"),
        (1, "pic.png"),
        (1, "<two words.md>"),
        (2, "three.md"),
        (3, "four.md"),
        (3, "five.png"),
        (4, "six.md"),
        (4, "seven_(v2).md"),
    ]


def test_a_backtick_in_the_info_string_opens_no_fence() -> None:
    """GitHub: a backtick fence's info string may not contain a backtick, so ```x` is
    text and the ``` after it opens the block."""
    text = "```x`\n```\ncode\n```\nprose"
    assert list(unfenced_lines(text)) == [(1, "```x`"), (5, "prose")]
    assert list(unfenced_lines("~~~x`\ncode\n~~~\nprose")) == [(4, "prose")]


def test_shown_lines_leave_out_comments_quotes_and_code() -> None:
    text = (
        "Intro <!-- hidden --> text\n"  # 1: the comment is cut out of the line
        "<!--\n"  # 2-4: a comment block
        "/judge override accept\n"
        "-->\n"
        "> quoted\n"  # 5: a quote
        "lazy\n"  # 6: still inside the quote
        "\n"
        "```\n"  # 8-10: a fence
        "/judge rerun\n"
        "```\n"
        "after <!-- open\n"  # 11: a comment opened inside a paragraph
        "hidden\n"
        "closed --> tail\n"  # 13: the rest of the line is mid-paragraph, not a line start
        "last"
    )
    assert list(shown_lines(text)) == [(1, "Intro  text"), (11, "after "), (14, "last")]
