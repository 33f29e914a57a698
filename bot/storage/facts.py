"""The `verdict_facts` statements of both backends: the row written with each verdict
record (`bot.storage.verdict_facts` says what it holds) and the reports' read of them.

Each backend's own module (`sqlite_facts`, `postgres_facts`) keeps its table definition
(migration 4) and its backfill of the records that have no facts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from typing import Any, Final

from bot.storage.base import VerdictFacts
from bot.storage.sql import Row, Sql
from bot.storage.verdict_facts import decode_tags, fact_columns

INSERT: Final = Sql(
    "INSERT INTO verdict_facts (seq, task_id, repository, repo_key, head_sha, created_at,"
    " decision, label, mode, decided_by, overridden, rounds, calls, tags, readable)"
    " VALUES (:seq, :task_id, :repository, :repo_key, :head_sha, :created_at, :decision,"
    " :label, :mode, :decided_by, :overridden, :rounds, :calls, :tags, :readable)"
    " ON CONFLICT (seq) DO NOTHING"
)
_COLUMNS: Final = (
    "seq, task_id, repository, head_sha, created_at, decision, label, mode, decided_by,"
    " overridden, rounds, calls, tags, readable"
)


def facts_params(
    seq: int,
    task_id: str,
    repository: str | None,
    head_sha: str | None,
    created_at: Any,
    record: dict[str, Any],
    flag: Callable[[bool], Any],
) -> dict[str, Any]:
    """`INSERT`'s parameters for one record's facts: `created_at` and the flags (`flag`)
    as the backend's columns hold them."""
    c = fact_columns(record)
    return {
        "seq": seq,
        "task_id": task_id,
        "repository": repository,
        "repo_key": (repository or "").lower(),
        "head_sha": head_sha,
        "created_at": created_at,
        "decision": c.decision,
        "label": c.label,
        "mode": c.mode,
        "decided_by": c.decided_by,
        "overridden": flag(c.overridden),
        "rounds": c.rounds,
        "calls": c.calls,
        "tags": c.tags,
        "readable": flag(c.readable),
    }


@cache
def select(by_repository: bool, by_time: bool) -> Sql:
    """The facts of one repository (`:repo_key`) and/or from a time on (`:since`), by seq;
    made once per combination."""
    clauses = [
        clause
        for clause, wanted in (
            ("repo_key = :repo_key", by_repository),
            ("created_at >= :since", by_time),
        )
        if wanted
    ]
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return Sql(f"SELECT {_COLUMNS} FROM verdict_facts{where} ORDER BY seq")


def select_args(repo_key: str | None, since: Any) -> tuple[Sql, tuple[Any, ...]]:
    """`select`'s statement for these filters (None: not filtered), and its arguments."""
    statement = select(repo_key is not None, since is not None)
    params = {"repo_key": repo_key, "since": since}
    return statement, statement.args({name: params[name] for name in statement.names})


# What was appended after a reader last looked: one range of the primary key, so its cost
# is the rows it returns, however long the log.
AFTER: Final = Sql(
    f"SELECT {_COLUMNS} FROM verdict_facts WHERE seq > :after ORDER BY seq LIMIT :limit"
)
LAST_SEQ: Final = Sql("SELECT COALESCE(MAX(seq), 0) FROM verdict_facts")


def verdict_facts_of(rows: Sequence[Row], time_of: Callable[[Any], datetime]) -> list[VerdictFacts]:
    return [
        VerdictFacts(
            r[0],
            r[1],
            r[2],
            r[3],
            time_of(r[4]),
            r[5],
            r[6],
            r[7],
            r[8],
            bool(r[9]),
            r[10],
            r[11],
            decode_tags(r[12]),
            bool(r[13]),
        )
        for r in rows
    ]
