"""Storage written once: named SQL statements, and what a backend provides to run them.

A statement is one SQL text with `:name` parameters (`Sql`). When the module defining it
is imported, the text is turned into each driver's numbered form, `?1` for sqlite3 and
`$1` for asyncpg, numbered alike, so both drivers take the same arguments in the same
order (`Sql.args`). Nothing is parsed or built per call. Where the dialects differ
(upsert details, `MIN` against `LEAST`, casts, locking clauses), the statement names
that dialect's text beside the shared one, with the same parameters.

The table mixins written once (`deliveries`, `keyed`, `ledger`, `merge_queue`) build on
`SqlStore` and reach the database only through an `Executor`: `_sql` for a statement on
its own, `_transaction()` for several in one transaction. Each backend's connection
module supplies both, with its values: datetimes are integer microseconds on SQLite and
timestamptz on PostgreSQL, JSON documents text or jsonb, flags integers or booleans.
The hot paths (intake's group commit, the delivery and merge-head claims) stay in the
backend modules, written for their driver.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Final, Protocol

# A single-quoted literal (left alone), or a :name that is not half of a :: cast.
_PARAMETER: Final = re.compile(r"'[^']*'|(?<!:):([A-Za-z_][A-Za-z0-9_]*)")


def _names(text: str) -> tuple[str, ...]:
    """The parameters of `text`, in the order they first appear."""
    found = (match.group(1) for match in _PARAMETER.finditer(text))
    return tuple(dict.fromkeys(name for name in found if name is not None))


def _numbered(text: str, mark: str, names: tuple[str, ...]) -> str:
    assert set(_names(text)) == set(names), f"a dialect's text takes {names}: {text!r}"

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) if name is None else f"{mark}{names.index(name) + 1}"

    return _PARAMETER.sub(number, text)


class Sql:
    """One statement: its text for each driver, and the order its arguments go in."""

    __slots__ = ("names", "postgres", "sqlite")

    def __init__(self, text: str, *, sqlite: str | None = None, postgres: str | None = None):
        self.names: Final = _names(text)
        self.sqlite: Final = _numbered(text if sqlite is None else sqlite, "?", self.names)
        self.postgres: Final = _numbered(text if postgres is None else postgres, "$", self.names)

    def args(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        """The arguments in the statement's order (KeyError for one not given)."""
        assert len(params) == len(self.names), f"takes {self.names}, given {tuple(params)}"
        return tuple(params[name] for name in self.names)


class Row(Protocol):
    """A result row read by position: sqlite3's tuples and asyncpg's records alike."""

    def __getitem__(self, index: int, /) -> Any: ...


class Values(Protocol):
    """Values to and from a backend's columns."""

    def time(self, value: datetime) -> Any:
        """A datetime as its column holds it; ValueError for a naive one."""

    def time_of(self, value: Any) -> datetime: ...

    def optional_time_of(self, value: Any) -> datetime | None: ...

    def flag(self, value: bool) -> Any: ...

    def document_of(self, value: Any) -> dict[str, Any]:
        """A JSON document column's value (written as `dump_json` text) as a dict."""


class Executor(Values, Protocol):
    """Runs `Sql` on one backend (and converts values, as its `Values`)."""

    async def run(self, statement: Sql, /, **params: Any) -> int:
        """Runs the statement; how many rows it changed."""

    async def rows(self, statement: Sql, /, **params: Any) -> list[Row]: ...

    async def row(self, statement: Sql, /, **params: Any) -> Row | None:
        """The first row, or None when there is none."""


class Transaction(Executor, Protocol):
    """An `Executor` inside one transaction."""

    async def many(self, statement: Sql, params: Iterable[Mapping[str, Any]], /) -> None:
        """Runs the statement once for each set of parameters."""


class SqlStore(ABC):
    """What the table mixins written once need of a backend's connection class."""

    # Raised by an insert that lost a race for a unique key to another writer, which a
    # retry then finds (PostgreSQL's replicas); SQLite's write lock leaves no such race.
    _unique_violation: tuple[type[Exception], ...] = ()
    # The backend's values, for conversions made before the database is reached (a naive
    # datetime is refused before a closed store is).
    _values: Values

    @property
    @abstractmethod
    def _sql(self) -> Executor:
        """Statements run on their own (autocommit)."""

    @abstractmethod
    def _transaction(self) -> AbstractAsyncContextManager[Transaction]:
        """Statements run in one transaction: committed together, or rolled back on error."""
