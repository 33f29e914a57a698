"""Reading records into facts, the thresholds' settings, and the width-aware table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from bot.judge.records import Tier, Verdict, deciding_round
from bot.reports.facts import (
    LOCAL,
    _Rounds,
    facts_of_rows,
    human_decisions,
)
from bot.reports.table import Column, fit_line, plain, render_rows
from bot.reports.thresholds import CalibrationThresholds, parse_prices
from bot.settings import SettingsError, load_judge_section
from tests.reports.seeded import DEEP, NOW, QUICK, SEEDED, call, judgment, stored_of
from tests.support.fact_builders import fact_of, facts_of, facts_of_stored


def test_a_record_becomes_its_facts() -> None:
    (stored,) = stored_of(SEEDED[1:2])
    fact = fact_of(stored)
    assert fact is not None
    assert fact.change == ("octo/docs", "02" * 20, "octo/docs#2")
    assert [(r.tier, r.model, r.family, r.verdict) for r in fact.rounds] == [
        ("quick", QUICK[0], "openai", Verdict.IMPROVE),
        ("deep", DEEP[0], "kimi", Verdict.ACCEPT),
    ]
    assert [(c.tier, c.tokens, c.ok) for c in fact.calls] == [("quick", 500, True),
                                                               ("deep", 1500, True)]  # fmt: skip
    assert deciding_round(fact.rounds) == fact.rounds[1]
    assert fact.human is None and fact.scope == "octo/docs"


def test_the_last_round_only_in_top_level_fields_is_read() -> None:
    record = judgment(None, 8, Verdict.ACCEPT, "GO", [], [call(Tier.QUICK, QUICK, 10, 5)], NOW)
    record = record.model_copy(
        update={"round": 1, "judge_tier": Tier.QUICK, "model": QUICK[0], "verdict": Verdict.ACCEPT}
    )
    (stored,) = stored_of([record])
    raw = stored.record
    raw["calls"][0].pop("attempts")
    fact = fact_of(stored)
    assert fact is not None and fact.scope == LOCAL
    assert [(r.tier, r.family, r.verdict) for r in fact.rounds] == [
        ("quick", "openai", Verdict.ACCEPT)
    ]
    assert fact.calls[0].attempts == 1


@pytest.mark.parametrize(
    "damage",
    [
        {"go_no_go": "MAYBE"},
        {"final_decision": "perhaps"},
        {"calls": [{"tier": "quick"}]},
        {"previous_rounds": [{"round": "x"}]},
        {"final_decision": ["accept"]},
        {
            "previous_rounds": [
                {"round": 1, "judge_tier": "quick", "model": "m", "verdict": "so-so"}
            ]
        },
    ],
)
def test_a_damaged_record_is_unreadable(damage: dict[str, Any]) -> None:
    (stored,) = stored_of(SEEDED[:1])
    assert fact_of(replace(stored, record={**stored.record, **damage})) is None
    assert facts_of([stored, replace(stored, record={**stored.record, **damage})])[1] == 1


def test_decoded_rounds_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window repeats a few round shapes: each is decoded once, and the memory of them
    is emptied when full rather than growing."""
    remembered = _Rounds()
    monkeypatch.setattr(remembered, "limit", 2)
    quick = '[["quick","m",null,"accept"]]'
    first = remembered(quick)
    assert first is not None and remembered(quick) is first
    remembered('[["deep","m",null,"reject"]]')
    remembered('[["deep","m",null,"improve"]]')  # full: forgets, then remembers this one
    assert remembered(quick) == first and remembered(quick) is not first


def test_the_latest_human_decision_stands_and_a_cancel_removes_it() -> None:
    facts, _ = facts_of(stored_of(SEEDED))
    decided = {key[2]: human.verdict for key, human in human_decisions(facts).items()}
    assert decided == {"octo/docs#3": Verdict.ACCEPT, "octo/docs#5": Verdict.REJECT}


def price_of(thresholds: CalibrationThresholds, model: str) -> float | None:
    return thresholds.calibration_price_per_1k_tokens.get(model)


def test_thresholds_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS", "a/b=0.5, c=d=1,")
    monkeypatch.setenv("JUDGE_CALIBRATION_MIN_SAMPLE", "20")
    loaded = load_judge_section(CalibrationThresholds)
    assert loaded.calibration_min_sample == 20
    assert loaded.calibration_price_per_1k_tokens == {"a/b": 0.5, "c=d": 1.0}
    assert price_of(loaded, "a/b") == 0.5 and price_of(loaded, "x") is None


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS", "gpt=cheap", "is not a number"),
        ("JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS", "gpt", "is not model=price"),
        ("JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS", "gpt=-1", "finite number >= 0"),
        ("JUDGE_CALIBRATION_PRICE_PER_1K_TOKENS", "gpt=inf", "finite number >= 0"),
        ("JUDGE_CALIBRATION_MIN_GO_RATE", "0.95", "above JUDGE_CALIBRATION_MAX_GO_RATE"),
        ("JUDGE_CALIBRATION_MAX_FALSE_POSITIVE_RATE", "1.5", "JUDGE_CALIBRATION_MAX_FALSE_POS"),
    ],
)
def test_bad_thresholds_are_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, problem: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=problem):
        load_judge_section(CalibrationThresholds)


def test_prices_parse() -> None:
    assert parse_prices("") == {}
    assert parse_prices(" m = 2 ") == {"m": 2.0}


COLUMNS = (Column("name", flex=True), Column("n", right=True), Column("link", flex=True))
ROWS = [["octo/a-very-long-repository-name", "12", "https://example.test/a/b/c/d/e"]]


def render_table(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None
) -> str:
    return "\n".join(render_rows(columns, rows, width))


def test_a_table_keeps_its_natural_width_when_it_fits() -> None:
    assert render_table(COLUMNS, ROWS, None).splitlines() == [
        "name                               n  link",
        "octo/a-very-long-repository-name  12  https://example.test/a/b/c/d/e",
    ]


def test_a_wide_table_shrinks_its_flexible_columns() -> None:
    lines = render_table(COLUMNS, ROWS, 40).splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert lines[1] == "octo/a-very-long…  12  https://example.…"
    tiny = render_table(COLUMNS, ROWS, 10).splitlines()
    assert tiny[1] == "octo/a-…  12  https:/…"  # flexible columns stop at MIN_FLEX


def test_cells_are_safe_for_a_terminal() -> None:
    assert plain("a\x1b[2Jb\u202ec\nd") == "a\\x1b[2Jb\\u202ec d"
    assert fit_line("x" * 50, 10) == "x" * 9 + "…"
    assert fit_line("short", None) == "short"


def test_a_facts_row_broken_by_hand_is_unreadable_not_fatal() -> None:
    rows = [facts_of_stored(s) for s in stored_of(SEEDED[:3])]
    broken = [
        rows[0]._replace(calls="[[oops"),
        rows[1]._replace(rounds='[["quick"]]'),
        rows[2]._replace(calls='{"not": "a list"}'),
    ]
    facts, unreadable = facts_of_rows([*rows, *broken])
    assert (len(facts), unreadable) == (3, 3)
    assert facts == facts_of_rows(rows)[0]
    assert facts_of_rows([])[0] == []
    assert facts_of_rows([broken[2]]) == ([], 1)  # decodes with the window, still refused
