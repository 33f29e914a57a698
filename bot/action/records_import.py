"""Verdict records downloaded from the action's artifacts, added to a database so that
`judge-bot triage` and `judge-bot calibrate` read them as they read the App's.

Every line of every file is checked before anything is written: a file with a bad line
is refused whole, naming the file and line, and nothing is lost or half imported. A
record already in the database (the same artifact downloaded twice) is not added again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from bot.judge.engine import append_record
from bot.judge.records import VerdictRecord
from bot.storage.base import Storage


class BadRecords(ValueError):
    """A file that cannot be read as verdict records; the message names where."""


@dataclass(frozen=True)
class Imported:
    added: int
    already_there: int


def read_records(paths: Sequence[Path]) -> list[VerdictRecord]:
    """Every record of every file, in order; raises BadRecords at the first bad line."""
    records: list[VerdictRecord] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadRecords(f"{path}: cannot read it ({type(exc).__name__})") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(VerdictRecord.from_jsonl(line))
            except ValidationError as exc:
                first = exc.errors(include_url=False, include_input=False)[0]
                where = ".".join(str(part) for part in first.get("loc", ())) or "line"
                raise BadRecords(
                    f"{path}:{number}: not a verdict record ({where}: {first.get('msg')})"
                ) from None
    return records


async def import_records(storage: Storage, records: Sequence[VerdictRecord]) -> Imported:
    seen: dict[str, set[str]] = {}
    added = already = 0
    for record in records:
        known = seen.get(record.task_id)
        if known is None:
            stored = await storage.list_verdicts(task_id=record.task_id)
            known = {VerdictRecord.model_validate(v.record).to_jsonl() for v in stored}
            seen[record.task_id] = known
        line = record.to_jsonl()
        if line in known:
            already += 1
            continue
        await append_record(storage, record)
        known.add(line)
        added += 1
    return Imported(added, already)
