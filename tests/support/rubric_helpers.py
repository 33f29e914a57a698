"""Rubric answers shared by the rubric tests: the content rubric's dimensions, and a
completion reply with valid defaults that a test overrides by keyword."""

from __future__ import annotations

from typing import Any

DIMS = ("semantic", "pragmatic", "syntactic")


def completion(**kw: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "pass": False,
        "reason": "r",
        "missing_items": [],
        "questions_for_user": [],
        "forward_progress": False,
        "addressed_earlier": None,
        "suggested_next_steps": [],
    }
    obj.update(kw)
    return obj
