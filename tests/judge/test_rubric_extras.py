"""Typed extras keep the record's shape: every reply of a corpus per rubric is parsed and
recorded, and its round record (the verdict, scores, average, reasoning, improvements and
`extra`, with its keys in order and its numbers' types) must equal the golden one, written
from the code before each rubric's extras were typed (issue 23). So must the parse errors,
the GO label read back from the record, and the label of extras as a stored record may
hold them. Regenerating the golden values from the current code would defeat the test:
a change here is a change to the verdict schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.judge.engine.judgment import go_no_go
from bot.judge.engine.rounds import Tally, round_record
from bot.judge.engine.seating import Seat, Seating
from bot.judge.records import RoundRecord, RubricName, Tier, Verdict
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.parsing import ParseError, parse_answer

CONTENT: dict[str, Any] = {
    "plain": {
        "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
        "reasoning": "ok",
        "improvements": ["a"],
    },
    "average-matching": {
        "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 3},
        "average": 3.67,
        "verdict": "Accept",
    },
    "average-off": {
        "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 4},
        "average": 4.5,
        "verdict": "accept",
    },
    "average-int-off": {"scores": {"semantic": 2, "pragmatic": 2, "syntactic": 2}, "average": 5},
    "average-word": {"scores": {"semantic": 3, "pragmatic": 3, "syntactic": 3}, "average": "high"},
    "average-bool": {"scores": {"semantic": 3, "pragmatic": 3, "syntactic": 3}, "average": True},
    "average-list": {"scores": {"semantic": 3, "pragmatic": 3, "syntactic": 3}, "average": [3]},
    "average-numeric-string-off": {
        "scores": {"semantic": 5, "pragmatic": 5, "syntactic": 5},
        "avg": " 2.5 ",
    },
    "average-null": {
        "semantic": 1,
        "pragmatic": 5,
        "syntactic": 5,
        "average": None,
        "improvements": "one",
    },
    "nested-score-objects": {
        "scores": {"Semantic": {"score": "4"}, "pragmatic": 3, "syntactic": 2},
        "reason": ["x", {"text": "y"}],
    },
    "extra-keys-ignored": {
        "scores": {"semantic": 3, "pragmatic": 4, "syntactic": 4},
        "unsupported_claims": ["c"],
        "confidence": "low",
        "issues": [{"severity": "major"}],
    },
}

CODE_DIMS = {"correctness": 0.9, "scope_adherence": 0.8, "code_quality": 0.75, "completeness": 0.7}

CODE: dict[str, Any] = {
    "full": {
        "verdict": "pass",
        "score": 0.81,
        "dimensions": CODE_DIMS,
        "issues": [{"severity": "minor", "description": "nit"}],
        "summary": "fine",
        "improvements": ["tidy"],
        "confidence": "high",
    },
    "no-issues-no-confidence": {"dimensions": CODE_DIMS},
    "issues-null-confidence-null": {"dimensions": CODE_DIMS, "issues": None, "confidence": None},
    "low-confidence": {"dimensions": CODE_DIMS, "confidence": " LOW "},
    "medium-confidence": {
        "dimensions": CODE_DIMS,
        "confidence": "Medium",
        "issues": ["plain string issue", "  padded  "],
    },
    "major-issue-low-correctness": {
        "dimensions": {**CODE_DIMS, "correctness": 0.5},
        "issues": [{"severity": "MAJOR", "description": "test written to pass"}],
    },
    "major-issue-good-scores": {
        "dimensions": CODE_DIMS,
        "issues": [
            {"severity": "major", "description": "scope creep"},
            {"description": "no severity"},
        ],
    },
    "issue-description-object": {
        "dimensions": CODE_DIMS,
        "issues": [{"severity": "minor", "description": {"line": 3}}, {"severity": "minor"}],
    },
    "issues-fill-improvements": {
        "dimensions": CODE_DIMS,
        "issues": [
            {"severity": "minor", "description": "first"},
            {"severity": "minor", "description": ""},
        ],
        "improvements": [],
    },
    "score-off": {"dimensions": CODE_DIMS, "score": 0.2},
    "average-key-word": {"scores": CODE_DIMS, "average": "n/a"},
    "reject-dimension": {
        "dimensions": {**CODE_DIMS, "completeness": 0.1},
        "confidence": "high",
        "verdict": False,
    },
    "flat-dimensions": {**CODE_DIMS, "Issues": [], "Confidence": "high", "reasoning": "flat"},
}

COMPLETION: dict[str, Any] = {
    "pass-clean": {"pass": True, "reason": "done"},
    "pass-with-missing": {
        "pass": True,
        "reason": "r",
        "missing_items": ["tests"],
        "forward_progress": False,
    },
    "pass-string": {
        "pass": "TRUE",
        "missing_items": "one item",
        "suggested_next_steps": ["one item", "two"],
    },
    "fail-questions": {
        "pass": False,
        "forward_progress": True,
        "questions_for_user": ["which API?"],
        "missing_items": ["x"],
    },
    "fail-questions-alias": {
        "pass": "false",
        "forward_progress": "False",
        "questions": ["q"],
        "next_steps": ["n"],
    },
    "fail-progress": {
        "pass": False,
        "forward_progress": True,
        "missing_items": ["a", "b"],
        "suggested_next_steps": ["b", "c", "a"],
    },
    "fail-no-progress": {"pass": False, "forward_progress": False},
    "convergence-number": {"pass": False, "forward_progress": True, "convergence_estimate": 0.5},
    "convergence-int": {"pass": True, "convergence_estimate": 1},
    "convergence-string": {"pass": True, "convergence_estimate": " 0.25"},
    "convergence-word": {"pass": True, "convergence_estimate": "soon"},
    "convergence-bool": {"pass": True, "convergence_estimate": True},
    "addressed-all": {"pass": False, "forward_progress": True, "addressed_earlier": " All "},
    "addressed-some": {"pass": False, "forward_progress": True, "addressed_earlier": "some"},
    "addressed-none": {"pass": False, "forward_progress": False, "addressed_earlier": "none"},
    "addressed-bogus": {"pass": False, "forward_progress": False, "addressed_earlier": "most"},
    "addressed-null": {"pass": True, "addressed_earlier": None},
    "camel-case-keys": {
        "Pass": True,
        "missingItems": [],
        "questionsForUser": [],
        "Forward-Progress": True,
        "suggestedNextSteps": [{"suggestion": "s"}],
    },
}

RESEARCH_SCORES = {"support": 4, "sourcing": 4, "balance": 4, "calibration": 4}

RESEARCH: dict[str, Any] = {
    "clean": {"scores": RESEARCH_SCORES, "unsupported_claims": [], "improvements": ["x"]},
    "no-claims-key": {"scores": RESEARCH_SCORES},
    "claims": {"scores": RESEARCH_SCORES, "unsupported_claims": ["claim 1", "claim 2"]},
    "claims-alias-string": {
        "scores": RESEARCH_SCORES,
        "unsupported": "one claim",
        "improvements": ["given"],
    },
    "claims-average-off": {"scores": RESEARCH_SCORES, "average": 9, "Unsupported Claims": ["c"]},
    "average-word": {"scores": RESEARCH_SCORES, "average": "four", "unsupported_claims": None},
    "reject": {"scores": {**RESEARCH_SCORES, "balance": 1}, "unsupported_claims": [{"text": "t"}]},
}

ERRORS: dict[str, tuple[str, Any]] = {
    "code-bad-severity": ("code", {"dimensions": CODE_DIMS, "issues": [{"severity": "blocker"}]}),
    "code-issue-number": ("code", {"dimensions": CODE_DIMS, "issues": [3]}),
    "code-issues-object": ("code", {"dimensions": CODE_DIMS, "issues": {"severity": "major"}}),
    "code-bad-confidence": ("code", {"dimensions": CODE_DIMS, "confidence": "sure"}),
    "completion-missing-pass": ("completion", {"forward_progress": True}),
    "completion-missing-progress": ("completion", {"pass": False}),
    "completion-bad-progress": ("completion", {"pass": False, "forward_progress": "yes"}),
    "completion-missing-items-object": ("completion", {"pass": True, "missing_items": {"a": 1}}),
    "research-claims-number": ("research", {"scores": RESEARCH_SCORES, "unsupported_claims": 3}),
}

# Extras as a stored record may hold them (older writers, hand edits): the GO label read back.
STORED: dict[str, tuple[str, dict[str, Any], dict[str, float]]] = {
    "code-low": ("code", {"confidence": "low"}, dict(CODE_DIMS)),
    "code-no-extra": ("code", {}, dict(CODE_DIMS)),
    "code-upper-low": ("code", {"confidence": "LOW"}, dict(CODE_DIMS)),
    "code-low-scores": (
        "code",
        {"issues": [], "confidence": "high"},
        {**CODE_DIMS, "correctness": 0.5},
    ),
    "completion-pass": ("completion", {"pass": True}, {}),
    "completion-pass-string": ("completion", {"pass": "true"}, {}),
    "completion-pass-missing": ("completion", {"pass": True, "missing_items": ["x"]}, {}),
    "completion-pass-missing-string": ("completion", {"pass": True, "missing_items": "x"}, {}),
    "completion-pass-missing-empty": ("completion", {"pass": True, "missing_items": []}, {}),
    "completion-empty": ("completion", {}, {}),
    "completion-progress": ("completion", {"pass": False, "forward_progress": True}, {}),
    "completion-questions": ("completion", {"pass": False, "questions_for_user": ["q"]}, {}),
    "content-reported": (
        "content",
        {"reported_average": 9.0, "average_recomputed": True},
        {"semantic": 3, "pragmatic": 3, "syntactic": 3},
    ),
    "research-claims": ("research", {"unsupported_claims": ["c"]}, dict(RESEARCH_SCORES)),
}

# Golden: produced by the code before the extras were typed; never regenerate.

RECORDS: dict[str, tuple[dict[str, Any], str]] = {
    "content/plain": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {"semantic": 4.0, "pragmatic": 4.0, "syntactic": 5.0},
            "average": 4.33,
            "reasoning": "ok",
            "improvements": ["a"],
            "extra": {},
        },
        "GO",
    ),
    "content/average-matching": (
        {
            "verdict": "accept",
            "model_verdict": "accept",
            "scores": {"semantic": 4.0, "pragmatic": 4.0, "syntactic": 3.0},
            "average": 3.67,
            "reasoning": "",
            "improvements": [],
            "extra": {},
        },
        "GO",
    ),
    "content/average-off": (
        {
            "verdict": "accept",
            "model_verdict": "accept",
            "scores": {"semantic": 4.0, "pragmatic": 4.0, "syntactic": 4.0},
            "average": 4.0,
            "reasoning": "",
            "improvements": [],
            "extra": {"reported_average": 4.5, "average_recomputed": True},
        },
        "GO",
    ),
    "content/average-int-off": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"semantic": 2.0, "pragmatic": 2.0, "syntactic": 2.0},
            "average": 2.0,
            "reasoning": "",
            "improvements": [],
            "extra": {"reported_average": 5.0, "average_recomputed": True},
        },
        "NO-GO",
    ),
    "content/average-word": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"semantic": 3.0, "pragmatic": 3.0, "syntactic": 3.0},
            "average": 3.0,
            "reasoning": "",
            "improvements": [],
            "extra": {"reported_average": "high", "average_recomputed": True},
        },
        "GO",
    ),
    "content/average-bool": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"semantic": 3.0, "pragmatic": 3.0, "syntactic": 3.0},
            "average": 3.0,
            "reasoning": "",
            "improvements": [],
            "extra": {"reported_average": "True", "average_recomputed": True},
        },
        "GO",
    ),
    "content/average-list": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"semantic": 3.0, "pragmatic": 3.0, "syntactic": 3.0},
            "average": 3.0,
            "reasoning": "",
            "improvements": [],
            "extra": {"reported_average": "[3]", "average_recomputed": True},
        },
        "GO",
    ),
    "content/average-numeric-string-off": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {"semantic": 5.0, "pragmatic": 5.0, "syntactic": 5.0},
            "average": 5.0,
            "reasoning": "",
            "improvements": [],
            "extra": {"reported_average": 2.5, "average_recomputed": True},
        },
        "GO",
    ),
    "content/average-null": (
        {
            "verdict": "reject",
            "model_verdict": None,
            "scores": {"semantic": 1.0, "pragmatic": 5.0, "syntactic": 5.0},
            "average": 3.67,
            "reasoning": "",
            "improvements": ["one"],
            "extra": {},
        },
        "NO-GO",
    ),
    "content/nested-score-objects": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"semantic": 4.0, "pragmatic": 3.0, "syntactic": 2.0},
            "average": 3.0,
            "reasoning": "x\ny",
            "improvements": [],
            "extra": {},
        },
        "NO-GO",
    ),
    "content/extra-keys-ignored": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {"semantic": 3.0, "pragmatic": 4.0, "syntactic": 4.0},
            "average": 3.67,
            "reasoning": "",
            "improvements": [],
            "extra": {},
        },
        "GO",
    ),
    "code/full": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "fine",
            "improvements": ["tidy"],
            "extra": {
                "issues": [{"severity": "minor", "description": "nit"}],
                "confidence": "high",
            },
        },
        "GO",
    ),
    "code/no-issues-no-confidence": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": [],
            "extra": {"issues": [], "confidence": None},
        },
        "GO",
    ),
    "code/issues-null-confidence-null": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": [],
            "extra": {"issues": [], "confidence": None},
        },
        "GO",
    ),
    "code/low-confidence": (
        {
            "verdict": "escalate",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": [],
            "extra": {"issues": [], "confidence": "low"},
        },
        "UNDETERMINED",
    ),
    "code/medium-confidence": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": ["plain string issue", "padded"],
            "extra": {
                "issues": [
                    {"severity": "minor", "description": "plain string issue"},
                    {"severity": "minor", "description": "padded"},
                ],
                "confidence": "medium",
            },
        },
        "GO",
    ),
    "code/major-issue-low-correctness": (
        {
            "verdict": "reject",
            "model_verdict": None,
            "scores": {
                "correctness": 0.5,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.65,
            "reasoning": "",
            "improvements": ["test written to pass"],
            "extra": {
                "issues": [{"severity": "major", "description": "test written to pass"}],
                "confidence": None,
            },
        },
        "NO-GO",
    ),
    "code/major-issue-good-scores": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": ["scope creep", "no severity"],
            "extra": {
                "issues": [
                    {"severity": "major", "description": "scope creep"},
                    {"severity": "minor", "description": "no severity"},
                ],
                "confidence": None,
            },
        },
        "GO",
    ),
    "code/issue-description-object": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": ['{"line": 3}'],
            "extra": {
                "issues": [
                    {"severity": "minor", "description": '{"line": 3}'},
                    {"severity": "minor", "description": ""},
                ],
                "confidence": None,
            },
        },
        "GO",
    ),
    "code/issues-fill-improvements": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": ["first"],
            "extra": {
                "issues": [
                    {"severity": "minor", "description": "first"},
                    {"severity": "minor", "description": ""},
                ],
                "confidence": None,
            },
        },
        "GO",
    ),
    "code/score-off": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "issues": [],
                "confidence": None,
                "reported_average": 0.2,
                "average_recomputed": True,
            },
        },
        "GO",
    ),
    "code/average-key-word": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "issues": [],
                "confidence": None,
                "reported_average": "n/a",
                "average_recomputed": True,
            },
        },
        "GO",
    ),
    "code/reject-dimension": (
        {
            "verdict": "reject",
            "model_verdict": "fail",
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.1,
            },
            "average": 0.69,
            "reasoning": "",
            "improvements": [],
            "extra": {"issues": [], "confidence": "high"},
        },
        "NO-GO",
    ),
    "code/flat-dimensions": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {
                "correctness": 0.9,
                "scope_adherence": 0.8,
                "code_quality": 0.75,
                "completeness": 0.7,
            },
            "average": 0.81,
            "reasoning": "flat",
            "improvements": [],
            "extra": {"issues": [], "confidence": "high"},
        },
        "GO",
    ),
    "completion/pass-clean": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "done",
            "improvements": [],
            "extra": {
                "pass": True,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "GO",
    ),
    "completion/pass-with-missing": (
        {
            "verdict": "improve",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "r",
            "improvements": ["tests"],
            "extra": {
                "pass": True,
                "missing_items": ["tests"],
                "questions_for_user": [],
                "forward_progress": False,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/pass-string": (
        {
            "verdict": "improve",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": ["one item", "two"],
            "extra": {
                "pass": True,
                "missing_items": ["one item"],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": ["one item", "two"],
            },
        },
        "NO-GO",
    ),
    "completion/fail-questions": (
        {
            "verdict": "escalate",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": ["x"],
            "extra": {
                "pass": False,
                "missing_items": ["x"],
                "questions_for_user": ["which API?"],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/fail-questions-alias": (
        {
            "verdict": "escalate",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": ["n"],
            "extra": {
                "pass": False,
                "missing_items": [],
                "questions_for_user": ["q"],
                "forward_progress": False,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": ["n"],
            },
        },
        "NO-GO",
    ),
    "completion/fail-progress": (
        {
            "verdict": "improve",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": ["a", "b", "c"],
            "extra": {
                "pass": False,
                "missing_items": ["a", "b"],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": ["b", "c", "a"],
            },
        },
        "NO-GO",
    ),
    "completion/fail-no-progress": (
        {
            "verdict": "reject",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": False,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": False,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/convergence-number": (
        {
            "verdict": "improve",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": False,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": 0.5,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/convergence-int": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": True,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": 1.0,
                "suggested_next_steps": [],
            },
        },
        "GO",
    ),
    "completion/convergence-string": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": True,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": 0.25,
                "suggested_next_steps": [],
            },
        },
        "GO",
    ),
    "completion/convergence-word": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": True,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "GO",
    ),
    "completion/convergence-bool": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": True,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "GO",
    ),
    "completion/addressed-all": (
        {
            "verdict": "improve",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": False,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": "all",
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/addressed-some": (
        {
            "verdict": "improve",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": False,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": "some",
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/addressed-none": (
        {
            "verdict": "reject",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": False,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": False,
                "addressed_earlier": "none",
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/addressed-bogus": (
        {
            "verdict": "reject",
            "model_verdict": "fail",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": False,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": False,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "NO-GO",
    ),
    "completion/addressed-null": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "pass": True,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": [],
            },
        },
        "GO",
    ),
    "completion/camel-case-keys": (
        {
            "verdict": "accept",
            "model_verdict": "pass",
            "scores": {},
            "average": None,
            "reasoning": "",
            "improvements": ["s"],
            "extra": {
                "pass": True,
                "missing_items": [],
                "questions_for_user": [],
                "forward_progress": True,
                "addressed_earlier": None,
                "convergence_estimate": None,
                "suggested_next_steps": ["s"],
            },
        },
        "GO",
    ),
    "research/clean": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {"support": 4.0, "sourcing": 4.0, "balance": 4.0, "calibration": 4.0},
            "average": 4.0,
            "reasoning": "",
            "improvements": ["x"],
            "extra": {"unsupported_claims": []},
        },
        "GO",
    ),
    "research/no-claims-key": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {"support": 4.0, "sourcing": 4.0, "balance": 4.0, "calibration": 4.0},
            "average": 4.0,
            "reasoning": "",
            "improvements": [],
            "extra": {"unsupported_claims": []},
        },
        "GO",
    ),
    "research/claims": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"support": 4.0, "sourcing": 4.0, "balance": 4.0, "calibration": 4.0},
            "average": 4.0,
            "reasoning": "",
            "improvements": [
                "support or remove the claim: claim 1",
                "support or remove the claim: claim 2",
            ],
            "extra": {"unsupported_claims": ["claim 1", "claim 2"]},
        },
        "GO",
    ),
    "research/claims-alias-string": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"support": 4.0, "sourcing": 4.0, "balance": 4.0, "calibration": 4.0},
            "average": 4.0,
            "reasoning": "",
            "improvements": ["given"],
            "extra": {"unsupported_claims": ["one claim"]},
        },
        "GO",
    ),
    "research/claims-average-off": (
        {
            "verdict": "improve",
            "model_verdict": None,
            "scores": {"support": 4.0, "sourcing": 4.0, "balance": 4.0, "calibration": 4.0},
            "average": 4.0,
            "reasoning": "",
            "improvements": ["support or remove the claim: c"],
            "extra": {
                "unsupported_claims": ["c"],
                "reported_average": 9.0,
                "average_recomputed": True,
            },
        },
        "GO",
    ),
    "research/average-word": (
        {
            "verdict": "accept",
            "model_verdict": None,
            "scores": {"support": 4.0, "sourcing": 4.0, "balance": 4.0, "calibration": 4.0},
            "average": 4.0,
            "reasoning": "",
            "improvements": [],
            "extra": {
                "unsupported_claims": [],
                "reported_average": "four",
                "average_recomputed": True,
            },
        },
        "GO",
    ),
    "research/reject": (
        {
            "verdict": "reject",
            "model_verdict": None,
            "scores": {"support": 4.0, "sourcing": 4.0, "balance": 1.0, "calibration": 4.0},
            "average": 3.25,
            "reasoning": "",
            "improvements": ["support or remove the claim: t"],
            "extra": {"unsupported_claims": ["t"]},
        },
        "NO-GO",
    ),
}

PARSE_ERRORS: dict[str, str] = {
    "code-bad-severity": "issue severity 'blocker' is not major or minor",
    "code-issue-number": "each issue must be an object or a string",
    "code-issues-object": "'issues' must be a list",
    "code-bad-confidence": "confidence 'sure' is not high, medium or low",
    "completion-missing-pass": "missing 'pass'",
    "completion-missing-progress": "missing 'forward_progress'",
    "completion-bad-progress": "'forward_progress' must be true or false",
    "completion-missing-items-object": "'missing_items' must be a list of strings",
    "research-claims-number": "'unsupported_claims' must be a list of strings",
}

STORED_LABELS: dict[str, str] = {
    "code-low": "UNDETERMINED",
    "code-no-extra": "GO",
    "code-upper-low": "GO",
    "code-low-scores": "NO-GO",
    "completion-pass": "GO",
    "completion-pass-string": "NO-GO",
    "completion-pass-missing": "NO-GO",
    "completion-pass-missing-string": "NO-GO",
    "completion-pass-missing-empty": "GO",
    "completion-empty": "NO-GO",
    "completion-progress": "NO-GO",
    "completion-questions": "NO-GO",
    "content-reported": "GO",
    "research-claims": "GO",
}

CORPUS: dict[str, dict[str, Any]] = {
    f"{rubric}/{case}": reply
    for rubric, replies in (
        ("content", CONTENT),
        ("code", CODE),
        ("completion", COMPLETION),
        ("research", RESEARCH),
    )
    for case, reply in replies.items()
}


class _Provider:
    kind = "fake"


SEATED = Seating(
    Seat(model="m", family="openai", provider=_Provider(), timeout=2.0, max_chars=1000)  # type: ignore[arg-type]
)


def _recorded(case: str) -> RoundRecord:
    rubric = get_rubric(case.split("/")[0])
    answer = parse_answer(json.dumps(CORPUS[case]), rubric)
    return round_record(1, Tier.QUICK, SEATED, rubric, Tally(attempts=1, answer=answer))


def test_every_reply_has_a_golden_record() -> None:
    assert list(RECORDS) == list(CORPUS)


@pytest.mark.parametrize("case", list(CORPUS))
def test_the_record_of_a_reply_keeps_its_shape(case: str) -> None:
    """Same keys in the same order, same values of the same JSON types (4.0 is not 4)."""
    expected, _ = RECORDS[case]
    stored = json.loads(_recorded(case).model_dump_json())
    assert json.dumps({key: stored[key] for key in expected}) == json.dumps(expected)


@pytest.mark.parametrize("case", list(CORPUS))
def test_the_label_read_back_from_the_record_is_unchanged(case: str) -> None:
    _, label = RECORDS[case]
    record = _recorded(case)
    assert record.verdict is not None
    assert go_no_go(RubricName(case.split("/")[0]), record.verdict, [record]) == label


@pytest.mark.parametrize("case", list(CORPUS))
def test_a_rubric_reads_its_recorded_extras_back_as_parsed(case: str) -> None:
    rubric = get_rubric(case.split("/")[0])
    answer = parse_answer(json.dumps(CORPUS[case]), rubric)
    assert rubric.read_extras(answer.extras.as_record()) == answer.extras


@pytest.mark.parametrize("case", list(ERRORS))
def test_a_refused_reply_is_refused_in_the_same_words(case: str) -> None:
    rubric, reply = ERRORS[case]
    with pytest.raises(ParseError) as refused:
        parse_answer(json.dumps(reply), get_rubric(rubric))
    assert str(refused.value) == PARSE_ERRORS[case]


@pytest.mark.parametrize("case", list(STORED))
def test_extras_a_stored_record_may_hold_label_as_before(case: str) -> None:
    """Records written by other versions or edited by hand: the GO label read back keeps
    the old reading (`pass` must be the boolean true, any non-empty `missing_items` blocks,
    only the exact "low" confidence is undetermined)."""
    rubric, extra, scores = STORED[case]
    record = RoundRecord(
        round=1,
        judge_tier=Tier.QUICK,
        model="m",
        family="f",
        verdict=Verdict.IMPROVE,
        scores=scores,
        extra=extra,
    )
    assert go_no_go(RubricName(rubric), Verdict.IMPROVE, [record]) == STORED_LABELS[case]
