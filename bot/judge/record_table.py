"""A verdict record as plain text for a terminal: one row per round, then the decision,
findings and what was cut. Pure."""

from __future__ import annotations

from bot.judge.records import VerdictRecord


def _fmt_score(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}"


def render_table(record: VerdictRecord) -> str:
    """A readable summary of a record: one row per round, then the decision."""
    lines = [
        f"task {record.task_id}  rubric {record.rubric.value}  prompt {record.prompt_version}",
    ]
    if record.files:
        lines.append("files: " + ", ".join(record.files))
    lines.extend(_rounds_table(record))
    if record.models_not_run:
        lines.append("model tiers were NOT run: " + (record.models_not_run_note or ""))
    lines.extend(_decision_lines(record))
    lines.extend(_finding_lines(record))
    return "\n".join(lines)


def _rounds_table(record: VerdictRecord) -> list[str]:
    rounds = record.previous_rounds
    if not rounds:
        return []
    dims: list[str] = []
    for r in rounds:
        dims.extend(d for d in r.scores if d not in dims)
    header = ["#", "tier", "model", *dims, "avg", "verdict"]
    rows = [header]
    for r in rounds:
        verdict = r.verdict.value if r.verdict is not None else f"failed: {r.error}"
        model = r.model + (f" (for {r.substituted_for})" if r.substituted_for else "")
        scores = (_fmt_score(r.scores.get(d)) for d in dims)
        rows.append(
            [str(r.round), r.judge_tier.value, model, *scores, _fmt_score(r.average), verdict]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]))
    if not record.calls:
        lines.append("(from the verdict cache: no model was called)")
    return lines


def _decision_lines(record: VerdictRecord) -> list[str]:
    label = record.final_decision.value.upper()
    # The GO / NO-GO label only when it says something the verdict does not.
    decision = f"verdict: {label}" + ("" if record.go_no_go == label else f" ({record.go_no_go})")
    if record.consensus:
        decision += f"  consensus: {record.consensus}"
    lines = [decision]
    if record.reason:
        lines.append(f"reason: {record.reason}")
    if record.reasoning and record.previous_rounds:
        lines.append(f"reasoning: {record.reasoning}")
    if record.improvements:
        lines.append("improvements:")
        lines.extend(f"  - {item}" for item in record.improvements)
    return lines


def _finding_lines(record: VerdictRecord) -> list[str]:
    lines = []
    findings = [*record.mechanical_findings, *record.injection_findings]
    if findings:
        lines.append("findings:")
        for f in findings:
            where = f.path + (f":{f.line}" if f.line else "")
            lines.append(f"  - [{f.severity}] {f.kind} {where}: {f.message}")
    if record.authoring_families:
        lines.append("authored by families: " + ", ".join(record.authoring_families))
    if record.truncation:
        cut = ", ".join(
            f"{t.path} {t.kept_chars}/{t.original_chars} chars ({t.tier.value})"
            for t in record.truncation
        )
        lines.append("truncated: " + cut)
    return lines
