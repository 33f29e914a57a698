"""The Markdown sections that describe one judged group of files (one verdict record).

A change is judged as one record per rubric group; the check run shows each group as a
summary section (files, the per-tier score table, decision facts) and as detail
sections (each judge round's quoted reasoning and improvements, the findings table).
`bot.judging.check_run` puts these sections together, fits them into GitHub's size
limits and scrubs the result.

Each section is one whole block, so the renderer can drop a block that does not fit
without cutting a table in half. Everything a judge or an author wrote goes through
`cell`, `code` (`code_cell` inside a table), `quote_untrusted` or `bullet_untrusted`
here.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.gfm import bullet_untrusted, cell, code, code_cell, plural, quote_untrusted, table
from bot.judge.records import Finding, VerdictRecord
from bot.record_view import dimensions_of, format_score, round_verdict_cell, rounds_of

GROUP_REASONING_LIMIT = 6_000
MAX_LISTED_FILES = 20
MAX_LISTED_FINDINGS = 200


def files_line(files: Sequence[str]) -> str:
    """The first files as code spans, with a count of the rest."""
    shown = ", ".join(code(f) for f in files[:MAX_LISTED_FILES])
    if len(files) > MAX_LISTED_FILES:
        shown += f" and {len(files) - MAX_LISTED_FILES} more"
    return shown or "_no files_"


# --- summary --------------------------------------------------------------------------


def _group_heading(index: int, total: int, record: VerdictRecord) -> str:
    label = f"Group {index} of {total}" if total > 1 else "Judged files"
    return (
        f"### {label} · {record.rubric.value} rubric · {plural(len(record.files), 'file')} "
        f"· **{record.final_decision.value}**"
    )


def _scores_table(record: VerdictRecord) -> str:
    rounds = rounds_of(record)
    if not rounds:
        note = record.models_not_run_note or record.reason or f"decided by {record.mode}"
        return f"No model ran ({cell(note, 300)})."
    dims = dimensions_of(rounds)
    header = ["Tier", "Model", *(cell(d.replace("_", " "), 40) for d in dims), "Average", "Verdict"]
    rows = [
        [
            view.tier.value
            + (f" (instead of {cell(view.substituted_for, 40)})" if view.substituted_for else ""),
            code_cell(view.model, 80),
            *(format_score(view.scores.get(d)) for d in dims),
            format_score(view.average),
            round_verdict_cell(view),
        ]
        for view in rounds
    ]
    return table(header, rows)


def _truncation_line(record: VerdictRecord) -> str:
    if not record.truncation:
        return "Truncated: nothing."
    parts = [
        f"{code(t.path, 120)} {t.original_chars:,} → {t.kept_chars:,} characters "
        f"for the {t.tier.value} judge"
        for t in record.truncation[:MAX_LISTED_FILES]
    ]
    more = len(record.truncation) - MAX_LISTED_FILES
    if more > 0:
        parts.append(f"{more} more")
    return "Truncated: " + "; ".join(parts) + "."


def _findings_line(record: VerdictRecord) -> str:
    def count(findings: Sequence[Finding]) -> str:
        hard = sum(1 for f in findings if f.severity == "hard")
        return f"{len(findings)} ({hard} hard, {len(findings) - hard} soft)"

    return (
        f"Findings: mechanical {count(record.mechanical_findings)}, "
        f"injection {count(record.injection_findings)}."
    )


def _override_line(record: VerdictRecord) -> str | None:
    if not record.human_override:
        return None
    who = f"@{cell(record.decided_by, 60)}" if record.decided_by else "a maintainer"
    return f"**Human override:** {record.final_decision.value} by {who}."


def group_summary(index: int, total: int, record: VerdictRecord) -> str:
    """Group `index` of `total` for the run's summary: heading, files, score table and
    the facts behind the decision (consensus, override, truncation, findings)."""
    decision = f"Decision: **{record.final_decision.value}**"
    if record.consensus:
        decision += f" (consensus: {record.consensus})"
    if record.reason:
        decision += f" — {cell(record.reason, 300)}"
    facts = [decision + "."]
    override = _override_line(record)
    if override:
        facts.append(override)
    facts.append(_truncation_line(record))
    facts.append(_findings_line(record))
    if record.models_not_run and record.models_not_run_note:
        facts.append(f"Models not run: {cell(record.models_not_run_note, 300)}.")
    return "\n".join(
        [
            _group_heading(index, total, record),
            "",
            "Files: " + files_line(record.files),
            "",
            _scores_table(record),
            "",
            *(f"- {fact}" for fact in facts),
        ]
    )


# --- details --------------------------------------------------------------------------


def _round_text(record: VerdictRecord, group: str) -> list[str]:
    blocks: list[str] = []
    for view in rounds_of(record):
        head = f"### {group}{view.tier.value} judge · {code(view.model, 80)}"
        parts = [head]
        if view.error:
            parts.append(f"The call failed: {cell(view.error, 300)}.")
        if view.reasoning:
            parts.append(quote_untrusted(view.reasoning, GROUP_REASONING_LIMIT))
        if view.improvements:
            parts.append(
                "Improvements:\n\n"
                + bullet_untrusted(view.improvements, max_items=30, item_limit=500)
            )
        blocks.append("\n\n".join(parts))
    return blocks


def _findings_text(record: VerdictRecord, group: str) -> str | None:
    findings = [*record.mechanical_findings, *record.injection_findings]
    if not findings:
        return None
    rows = [
        [
            f.source,
            f.severity,
            cell(f.kind, 40),
            code_cell(f"{f.path}:{f.line}" if f.line else f.path, 120),
            cell(f.message, 300),
        ]
        for f in findings[:MAX_LISTED_FINDINGS]
    ]
    block = f"### {group}Findings\n\n" + table(
        ["Source", "Severity", "Kind", "Where", "Message"], rows
    )
    if len(findings) > MAX_LISTED_FINDINGS:
        block += f"\n\n_… {len(findings) - MAX_LISTED_FINDINGS} more findings not listed._"
    return block


def group_details(record: VerdictRecord, group: str) -> list[str]:
    """The group's detail blocks for the run's text: one per judge round, then the
    findings table (if any). `group` prefixes each heading (`Group 2 · `, or empty)."""
    blocks = _round_text(record, group)
    findings = _findings_text(record, group)
    if findings:
        blocks.append(findings)
    return blocks
