"""Every setting judge-bot reads is documented where users look for it, by its name.

The judge's tables name per-tier settings once as `JUDGE_<TIER>_X` and siblings by their
suffix (`JUDGE_<TIER>_BASE_URL`, `_API_KEY`), so those spellings count too."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.setting_names import all_setting_names

DOCS = Path(__file__).resolve().parent.parent / "docs"
GROUPED = re.compile(
    r"^(JUDGE_(?:QUICK|DEEP|TIEBREAKER|ALTERNATE_OPENAI|ALTERNATE_ANTHROPIC))_(.+)$"
)


def documented_text() -> str:
    return "\n".join(path.read_text() for path in sorted(DOCS.glob("*.md")))


def is_documented(name: str, text: str) -> bool:
    if f"`{name}`" in text:
        return True
    grouped = GROUPED.match(name)
    if grouped is None:
        return False
    prefix, suffix = grouped.groups()
    family = "JUDGE_<TIER>" if not prefix.startswith("JUDGE_ALTERNATE") else prefix
    return f"`{family}_{suffix}`" in text or (f"`{family}_" in text and f"`_{suffix}`" in text)


def test_every_server_and_judge_setting_is_named_in_the_docs() -> None:
    text = documented_text()
    assert sorted(name for name in all_setting_names() if not is_documented(name, text)) == []


def test_an_undocumented_name_is_noticed() -> None:
    assert not is_documented("JUDGE_NO_SUCH_SETTING", documented_text())
    assert not is_documented("JUDGE_QUICK_NO_SUCH_SUFFIX", documented_text())
