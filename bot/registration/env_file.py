"""The registered App's credentials merged into `.env`, never replacing a value.

`plan_update` (pure) decides: a name the file does not set, or sets blank (`APP_ID=` from a
copied example), gets the new value; a name set to the same value stays; a name set to
another value is a conflict, and then the file is not changed at all (an App half
replaced is worse than none). `save_credentials` carries the plan out: the file the
settings loader reads (`bot.settings.env_file`), rewritten atomically with mode 0600, or,
on a conflict or where that file must not be written (git tracks it; `JUDGE_ENV_FILE=`
reads none), a new file of its own, mode 0600, for the person to merge by hand.

Names compare as the loader compares them: case-insensitively, the last assignment
winning. Values are written so that the loader (python-dotenv, with `${NAME}`
interpolation) reads back exactly what GitHub sent. The private key is the exception that
keeps Probot's form: one unquoted line with `\\n` for its line breaks, which the settings
turn back into the PEM, and which `docker run --env-file` (no quote handling) passes on
unchanged too.
"""

from __future__ import annotations

import io
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from dotenv.parser import parse_stream

from bot.settings import ENV_FILE_VARIABLE, SettingsError, env_file, tracked_by_git

__all__ = [
    "EnvPlan",
    "EnvTarget",
    "SaveError",
    "Saved",
    "choose_target",
    "format_assignment",
    "overridden_by_environment",
    "plan_update",
    "save_credentials",
]

# A second name that would make the loader use another key than the one written.
COMPETING = {"PRIVATE_KEY": ("PRIVATE_KEY_PATH",)}
# Settings whose `\n` the settings themselves read as a line break.
ESCAPED_NEWLINES = frozenset({"PRIVATE_KEY"})
_BARE = re.compile(r"[A-Za-z0-9._+/=:@-]+")
# A PEM's characters, once its line breaks are `\n`: a space inside, never at either end.
_PEM_LINE = re.compile(r"[A-Za-z0-9+/=\\-][A-Za-z0-9+/= \\-]*[A-Za-z0-9+/=\\-]")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class SaveError(Exception):
    """The credentials could not be written; the message names the file, never a value."""


def format_assignment(name: str, value: str) -> str:
    """`NAME=value` as one line the loader reads back as `value` exactly (for the names in
    `ESCAPED_NEWLINES`, once the settings have turned `\\n` back into line breaks)."""
    if name in ESCAPED_NEWLINES and "\\" not in value:
        escaped = value.replace("\n", "\\n")
        if _PEM_LINE.fullmatch(escaped):
            return f"{name}={escaped}"
    if _BARE.fullmatch(value):
        return f"{name}={value}"
    if "${" in value:
        # The loader would expand it as a variable, and no quoting stops that.
        raise SaveError(f"{name}: the value cannot be written to a .env file")
    return f'{name}="' + "".join(_ESCAPES.get(char, char) for char in value) + '"'


@dataclass(frozen=True)
class EnvPlan:
    # The file's new text; None when a conflict means it stays as it is.
    text: str | None
    added: tuple[str, ...]
    unchanged: tuple[str, ...]
    conflicts: tuple[str, ...]


def plan_update(existing: str, values: Mapping[str, str], header: str) -> EnvPlan:
    """`existing` with `values` merged in (module docstring); `header` comments new lines."""
    bindings = list(parse_stream(io.StringIO(existing)))
    current: dict[str, str] = {}
    last_index: dict[str, int] = {}
    for index, binding in enumerate(bindings):
        if binding.key is not None:
            name = binding.key.upper()
            value = binding.value or ""
            current[name] = value.replace("\\n", "\n") if name in ESCAPED_NEWLINES else value
            last_index[name] = index
    added: list[str] = []
    unchanged: list[str] = []
    conflicts: list[str] = []
    for name, value in values.items():
        present = current.get(name, "")
        if not present.strip():
            added.append(name)
        elif present == value:
            unchanged.append(name)
        else:
            conflicts.append(name)
        conflicts.extend(
            other for other in COMPETING.get(name, ()) if current.get(other, "").strip()
        )
    if conflicts:
        return EnvPlan(None, (), tuple(unchanged), tuple(conflicts))
    pieces = [binding.original.string for binding in bindings]
    appended: list[str] = []
    for name in added:
        line = format_assignment(name, values[name])
        if name in last_index:  # set blank: filled in where it stands
            at = last_index[name]
            ending = "\n" if pieces[at].endswith("\n") else ""
            pieces[at] = line + ending
        else:
            appended.append(line + "\n")
    text = "".join(pieces)
    if appended:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "".join([f"# {header}\n", *appended])
    return EnvPlan(text, tuple(added), tuple(unchanged), ())


def overridden_by_environment(names: tuple[str, ...], environ: Mapping[str, str]) -> list[str]:
    """The names the environment sets, which win over any `.env` (the loader's order)."""
    set_here = {key.upper() for key, value in environ.items() if value.strip()}
    return [name for name in names if name in set_here]


@dataclass(frozen=True)
class EnvTarget:
    # The `.env` the loader reads (or will read once created); None: must not be written.
    path: Path | None
    # Why not, when `path` is None.
    reason: str | None = None


def choose_target(cwd: Path, environ: Mapping[str, str]) -> EnvTarget:
    try:
        path = env_file(cwd, environ)
    except SettingsError as exc:
        return EnvTarget(None, str(exc))
    if path is None and environ.get(ENV_FILE_VARIABLE) is not None:
        return EnvTarget(None, f"{ENV_FILE_VARIABLE} is empty, so judge-bot reads no .env file")
    path = path or cwd / ".env"
    if path.exists() and tracked_by_git(path):
        return EnvTarget(None, f"git tracks {path.name}, and credentials must never be committed")
    return EnvTarget(path.resolve())


class Where(StrEnum):
    ENV = "env"
    SEPARATE = "separate"


@dataclass(frozen=True)
class Saved:
    path: Path
    where: Where
    added: tuple[str, ...]
    unchanged: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    # Why the loader's own file was not written (SEPARATE without conflicts).
    reason: str | None = None


def save_credentials(
    values: Mapping[str, str], target: EnvTarget, cwd: Path, separate_name: str, header: str
) -> Saved:
    """Write `values` per the module docstring. `separate_name` names the file of their
    own, next to the `.env` (or in `cwd`), created only when needed and never reused."""
    if target.path is not None:
        existing = _read(target.path)
        plan = plan_update(existing, values, header)
        if plan.text is not None:
            _replace_private(target.path, plan.text)
            return Saved(target.path, Where.ENV, plan.added, plan.unchanged)
        conflicts = plan.conflicts
        folder = target.path.parent
    else:
        conflicts = ()
        folder = cwd
    text = plan_update("", values, header).text or ""
    separate = folder / separate_name
    _create_private(separate, text)
    return Saved(separate, Where.SEPARATE, tuple(values), (), conflicts, target.reason)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise SaveError(f"{path}: cannot be read ({reason})") from None


def _write_new(path: Path, text: str) -> None:
    """Create `path` (it must not exist) with mode 0600 whatever the umask, and `text`."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _replace_private(path: Path, text: str) -> None:
    """`path` replaced by `text` in one step, so a crash leaves the old file or the new."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        _write_new(temporary, text)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise SaveError(f"{path}: cannot be written ({exc.strerror})") from None


def _create_private(path: Path, text: str) -> None:
    try:
        _write_new(path, text)
    except FileExistsError:
        raise SaveError(f"{path}: already exists, and judge-bot does not replace it") from None
    except OSError as exc:
        raise SaveError(f"{path}: cannot be written ({exc.strerror})") from None
