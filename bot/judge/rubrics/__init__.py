"""The four rubrics a judge can score against, and how scores become verdicts.

Every verdict is computed from the scores by `Rubric.decide`; the label the
model wrote is kept as `model_verdict` for calibration only.

content (KLS dimensions semantic/pragmatic/syntactic, whole scores 1-5; seed 000)
    reject   any dimension < 2
    accept   every dimension >= 3 and the average >= 3.5
    improve  everything else
  The seed words improve as "any < 3 or average < 3.5, but all >= 2"; with the
  reject rule checked first that is exactly "everything else", so (2,5,5) is
  improve and (3,3,4) (average 3.33) is improve. The average is compared
  exactly (3 * 3.5 <= sum), not after rounding; the recorded average is
  rounded to two places. `go_no_go` is the separate phase A/B pre-push label:
  GO when every dimension >= 3 (so (3,3,3) is GO yet improve in phase C); how a
  whole judgment is labelled is bot/judge/engine/judgment.py `go_no_go`.

code (seed 002: correctness, scope_adherence, code_quality, completeness in 0.0-1.0;
      weights .4/.2/.2/.2 give the composite average)
    escalate a reported confidence of "low" (the judge itself says it cannot
             tell; seed 000 treats a judge lacking confidence as undetermined,
             and here a human looks instead of a guess becoming a gate)
    reject   any dimension < 0.4, or a major issue while correctness < 0.7
    accept   every dimension >= 0.7 and no major issue
    improve  everything else (including all >= 0.7 with a major issue)

completion (seed 003: pass, reason, missing_items, questions_for_user,
            forward_progress, suggested_next_steps)
    accept   pass and no missing items (a pass that lists missing items
             contradicts itself and is improve)
    escalate not pass and the judge has questions for the user
    improve  not pass, with forward progress
    reject   not pass, no forward progress
  The seed's fail-open (a failed judge call returns pass=true) is not copied:
  failures are undetermined rounds, decided by the engine.

research (seed 004: support, sourcing, balance, calibration, whole scores 1-5, and
          the claims the judge found unsupported)
    reject   any dimension < 2
    accept   every dimension >= 3, the average >= 3.5 and no unsupported claim
    improve  everything else (including all >= 3 with an unsupported claim)
  The counts (claims, sources, domains, counter-evidence, the stated confidence,
  the verifiable ratio) are not asked of the judge: they are mechanical findings
  (bot/judge/checks/research_claims.py), and the hard ones reject before any model runs.
  `go_no_go` reads the scores as content's does: GO when every dimension >= 3.

These are per-round verdicts. How rounds combine (quick -> deep -> tiebreaker,
the seed's "escalate when models disagree", whether a quick reject is final) is
the protocol's job (bot/judge/engine/tiers.py); a rubric escalates only when one
judge says it cannot decide (code: low confidence; completion: questions only
a human can answer).

Each rubric lives in its own module of this room; this module is the registry the rest of
the judge imports rubrics from, and `get_rubric` the one place a rubric name becomes a
rubric (`_RUBRICS`: each name's class and thresholds). What other rooms need of a rubric
they ask of it, never of its name: its dimensions, the phrases that name them for tagging
(`dimension_phrases`), its low-score bar, what the prompt keeps first. So a new rubric is
its module, its row in `_RUBRICS` (and `Thresholds`), and its name in `records.RubricName`:

    content, code, completion, research
                       the four rubrics, one module each, as above
    base               the `Rubric` interface, the parsed answer, and what rubrics share
    parsing            a model's reply read into a rubric's answer, or refused
    research_settings  the research rubric's thresholds: `JUDGE_RESEARCH_*` and a
                       repository's `research:` overrides
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.judge.records import RubricName
from bot.judge.rubrics.base import Extras, Rubric, RubricAnswer, ScoredExtras, scores_go_no_go
from bot.judge.rubrics.code import CodeExtras, CodeIssue, CodeRubric, CodeThresholds
from bot.judge.rubrics.completion import (
    CompletionExtras,
    CompletionRubric,
    CompletionThresholds,
)
from bot.judge.rubrics.content import ContentRubric, ContentThresholds, content_verdict
from bot.judge.rubrics.parsing import ParseError
from bot.judge.rubrics.research import ResearchExtras, ResearchRubric, ResearchThresholds

__all__ = [
    "CodeExtras",
    "CodeIssue",
    "CodeRubric",
    "CodeThresholds",
    "CompletionExtras",
    "CompletionRubric",
    "CompletionThresholds",
    "ContentRubric",
    "ContentThresholds",
    "Extras",
    "ParseError",
    "ResearchExtras",
    "ResearchRubric",
    "ResearchThresholds",
    "Rubric",
    "RubricAnswer",
    "RubricName",
    "ScoredExtras",
    "Thresholds",
    "content_verdict",
    "get_rubric",
    "scores_go_no_go",
]

Thresholds = ContentThresholds | CodeThresholds | CompletionThresholds | ResearchThresholds


_RUBRICS: Mapping[RubricName, tuple[Callable[[Any], Rubric], type[Thresholds]]] = {
    RubricName.CONTENT: (ContentRubric, ContentThresholds),
    RubricName.CODE: (CodeRubric, CodeThresholds),
    RubricName.COMPLETION: (CompletionRubric, CompletionThresholds),
    RubricName.RESEARCH: (ResearchRubric, ResearchThresholds),
}
"""Each rubric's class, and the thresholds it is built with (its defaults when none)."""


def get_rubric(name: RubricName | str, thresholds: Thresholds | None = None) -> Rubric:
    rubric_name = RubricName(name)
    build, wanted = _RUBRICS[rubric_name]
    if thresholds is not None and not isinstance(thresholds, wanted):
        raise TypeError(f"{rubric_name.value} rubric needs {wanted.__name__}")
    return build(thresholds)
