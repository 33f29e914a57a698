"""What intake reads of a webhook body, found without decoding the rest of it.

Intake needs a handful of values before it answers: `action`, `installation.id`,
`repository.full_name`, and whatever top-level key a router routes on. Decoding the whole
body into Python objects to read them was the largest single cost of intake (a 29 KB
`pull_request_review`: about 45 us in the server, plus freeing the objects again).
simdjson validates the whole document just as strictly in about 6 us and builds no Python
objects for what nobody reads; the few values intake reads are then taken from it.

The fast path must accept only what `json_body.parse_webhook_body` accepts, and give the
values orjson's decode gives, because the worker later decodes the stored body with orjson
and the handlers read that. Where simdjson differs, the body takes the full decode:

* it reads a UTF-8 byte order mark as whitespace; orjson refuses it;
* it allows far deeper nesting than intake's `MAX_JSON_DEPTH`. Its own limit does the check:
  the body is parsed once inside as many arrays as leave it exactly that much room
  (`_depth_padding`); a body refused there may still be within the limit, by one level
  (simdjson does not count an empty innermost array or object), and the full decode decides;
* with a duplicate key it finds the first value, orjson keeps the last: a duplicate
  top-level key, or a duplicate of the member read inside `installation` or `repository`,
  takes the full decode;
* its lookup by key stops at a NUL, so a top-level key holding one takes the full decode;
* it refuses some numbers orjson accepts (integers beyond 64 bits): the full decode then
  decides, so nothing it accepts is refused.

Everything else simdjson refuses (invalid UTF-8, control characters, unpaired surrogate
escapes, NaN, numbers beyond a double, trailing data) orjson refuses too; the full decode
runs only to name the reason. `tests/intake/test_body_fields.py` compares the two paths on
GitHub's example payloads and on mutations of them.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Final

import simdjson

from bot.intake.json_body import MAX_JSON_DEPTH, parse_webhook_body

# A parser keeps the largest buffers it ever needed (about 13 bytes for each byte of a body
# full of short tokens), so larger bodies, which GitHub rarely sends (most are a few tens of
# KB), are decoded whole and no parser holds more than a few megabytes.
FAST_PATH_MAX_BYTES: Final = 256 * 1024
# Looking a key up walks the object's keys, so reading every top-level key of an object with
# many costs time in the square of their number. GitHub's payloads have about ten.
FAST_PATH_MAX_KEYS: Final = 64
_BYTE_ORDER_MARK: Final = b"\xef\xbb\xbf"
# The one member intake reads inside each of these top-level objects.
_NESTED_MEMBER: Final = {"installation": "id", "repository": "full_name"}

# A parser reuses its buffers from one document to the next, so each thread keeps one.
_parsers = threading.local()


def webhook_fields(body: bytes) -> dict[str, Any]:
    """The body's top-level members as intake reads them, or `BodyRefused` naming what is
    wrong with it.

    `installation` and `repository`, when objects, hold only `id` and `full_name` (when
    present). Any other object or array member stands as an empty dict or list: nobody at
    intake reads into it, and like the decoded value it is unhashable, so a router asked to
    route on it fails the same way. A body the fast path does not take is decoded whole,
    and then all of it is returned."""
    fields = _fast_fields(body)
    return fields if fields is not None else parse_webhook_body(body)


def _fast_fields(body: bytes) -> dict[str, Any] | None:
    if len(body) > FAST_PATH_MAX_BYTES or body.startswith(_BYTE_ORDER_MARK):
        return None
    parser = _parser()
    opening, closing = _depth_padding()
    try:
        # Refused when invalid, or nested deeper than intake's limit allows.
        parser.parse(opening + body + closing)
        return _top_level(parser.parse(body))
    except ValueError:  # invalid JSON (UnicodeDecodeError included): the full decode says why
        return None
    except RuntimeError:
        # Too deep, or a number beyond 64 bits: the full decode decides. Or a document of
        # this parser's is still referenced (only if a caller kept one): this thread then
        # needs a parser of its own again.
        if not _usable(parser):
            _parsers.parser = simdjson.Parser()
        return None
    except LookupError:  # not expected of a validated document; the full decode is the rule
        return None


def _parser() -> simdjson.Parser:
    parser: simdjson.Parser | None = getattr(_parsers, "parser", None)
    if parser is None:
        parser = _parsers.parser = simdjson.Parser()
    return parser


def _usable(parser: simdjson.Parser) -> bool:
    try:
        parser.parse(b"0")
    except RuntimeError:
        return False
    return True


@functools.cache
def _depth_padding() -> tuple[bytes, bytes]:
    """The arrays to wrap a body in so that simdjson refuses it past `MAX_JSON_DEPTH`.

    simdjson's limit is found, not assumed: the deepest run of arrays it parses. A body inside
    `limit - MAX_JSON_DEPTH + 1` of them parses only if it nests at most `MAX_JSON_DEPTH - 1`
    levels, or `MAX_JSON_DEPTH` with an empty innermost array or object (not counted), so
    whatever parses there is within intake's limit."""
    parser = simdjson.Parser()
    deepest, too_deep = 1, 1 << 16
    while too_deep - deepest > 1:
        middle = (deepest + too_deep) // 2
        try:
            parser.parse(b"[" * middle + b"0" + b"]" * middle)
        except RuntimeError:
            too_deep = middle
        else:
            deepest = middle
    arrays = deepest - MAX_JSON_DEPTH + 1
    return b"[" * arrays, b"]" * arrays


def _top_level(document: Any) -> dict[str, Any] | None:
    if not isinstance(document, simdjson.Object):
        return None
    # Not `items()`, which builds every value whole.
    keys = list(document.keys())
    if (
        len(keys) > FAST_PATH_MAX_KEYS
        or len(set(keys)) != len(keys)
        or any("\x00" in key for key in keys)
    ):
        return None
    fields: dict[str, Any] = {}
    for key in keys:
        value = document[key]
        member = _NESTED_MEMBER.get(key)
        if isinstance(value, simdjson.Object):
            if member is None:
                fields[key] = {}
                continue
            inner = _only_member(value, member)
            if inner is None:
                return None
            fields[key] = inner
        elif isinstance(value, simdjson.Array):
            fields[key] = []
        else:
            fields[key] = value
    return fields


def _only_member(value: simdjson.Object, member: str) -> dict[str, Any] | None:
    """`{member: its value}` (or `{}` without it); None when the name occurs twice."""
    count = list(value.keys()).count(member)
    if count > 1:
        return None
    if count == 0:
        return {}
    inner = value[member]
    if isinstance(inner, simdjson.Object | simdjson.Array):
        # Not what GitHub sends; intake refuses it, and the full decode says so precisely.
        return None
    return {member: inner}
