"""Hostile webhook requests for fuzzing the intake, and a sender that puts them on the wire as is.

Every request starts from one of GitHub's example payloads and gets up to three mutations of
its body (types, ranges, nesting, encodings, numbers JSON cannot carry, duplicate keys) or of
its headers (event, delivery id, content type and encoding, signature); about one in seven
is left as GitHub sent it. Most are signed again after the mutation, so they get past the
signature and reach the checks behind it; some are not. About one in twelve reuses an
earlier delivery id, as a redelivery does.

The sender writes raw HTTP/1.1 over a socket because an HTTP client would refuse or repair
the very header bytes worth sending (invalid UTF-8, NUL). Header values are `str`; lone
surrogates in them go out as the raw bytes they escape (`surrogateescape`).

Used by `tests/intake/test_intake_fuzz.py` (a few hundred requests against the app in the test
process) and `benchmarks/intake_fuzz.py` (thousands against `python -m bot serve`).
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import hmac
import json
import random
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.webhook_helpers import SECRET, all_examples, sign

# Stands for a raw JSON token (NaN, 1e400, ...) that json.dumps cannot write.
RAW = "\x00raw\x00"
INT64_MAX = 2**63 - 1

# Values a sender may put where the intake reads a string or an id.
WEIRD_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    INT64_MAX,
    INT64_MAX + 1,
    2**64,
    -(2**63),
    10**30,
    1.0,
    1.5,
    "",
    "1",
    "opened",
    "a" * 300,
    "a" * 200_000,
    "nul\x00inside",
    "\ud800",
    "caf\u00e9",
    "line\nbreak",
    [],
    ["opened"],
    {},
    {"id": 1},
)
RAW_TOKENS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" * 5000, "1e-400", "-0")
EVENTS = ("push", "pull_request", "issue_comment", "watch", "ping", "installation", "check_run")
EVENT_HEADERS = (
    *EVENTS,
    *("", "   ", " push ", "x" * 255, "x" * 256, "x" * 5000, "a b"),
    *("pu\x00sh", "p\u00fcsh", "push\udcff", "tab\there"),
)


@dataclass
class FuzzRequest:
    """One request before it is sent: headers in order (a name may repeat) and the body."""

    headers: list[tuple[str, str]]
    body: bytes
    label: list[str] = field(default_factory=list)
    resign: bool = True

    def set_header(self, name: str, value: str | None) -> None:
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        if value is not None:
            self.headers.append((name, value))

    def header(self, name: str) -> str | None:
        """The last value of `name`, as a server's dict of the headers would keep it."""
        found = [v for k, v in self.headers if k.lower() == name.lower()]
        return found[-1] if found else None


Mutation = Callable[[random.Random, FuzzRequest], None]


def _dumps(payload: Any, raw: str | None = None) -> bytes:
    text = json.dumps(payload)
    if raw is not None:
        text = text.replace(json.dumps(RAW), raw)
    # Strings with lone surrogates are written as \ud800 escapes: valid JSON syntax.
    return text.encode()


def _payload(request: FuzzRequest) -> Any:
    try:
        return json.loads(request.body)
    except (ValueError, RecursionError):
        return None


def _set_path(request: FuzzRequest, path: Sequence[str], value: Any, raw: str | None) -> None:
    payload = _payload(request)
    if not isinstance(payload, dict):
        payload = {}
    node = payload
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value
    request.body = _dumps(payload, raw)


def _field(path: tuple[str, ...]) -> Mutation:
    def mutate(rng: random.Random, request: FuzzRequest) -> None:
        if rng.random() < 0.25:
            token = rng.choice(RAW_TOKENS)
            _set_path(request, path, RAW, token)
            request.label.append(f"{'.'.join(path)}=raw:{token[:12]}")
        else:
            value = rng.choice(WEIRD_VALUES)
            _set_path(request, path, value, None)
            request.label.append(f"{'.'.join(path)}={value!r:.20}")

    return mutate


def _not_an_object(rng: random.Random, request: FuzzRequest) -> None:
    request.body = _dumps(rng.choice([[1, 2], "text", 3, None, [_payload(request)]]))
    request.label.append("not-an-object")


def _deep(rng: random.Random, request: FuzzRequest) -> None:
    depth = rng.choice([10, 98, 99, 100, 101, 500, 1000, 5000, 100_000])
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    payload = _payload(request)
    base = payload if isinstance(payload, dict) else {}
    nested = _dumps(base | {"nested": RAW}).decode()
    request.body = nested.replace(json.dumps(RAW), opener * depth + "1" + closer * depth).encode()
    request.label.append(f"deep:{depth}{opener[0]}")


def _unclosed_deep(rng: random.Random, request: FuzzRequest) -> None:
    request.body = b"[" * rng.choice([1000, 100_000])
    request.label.append("unclosed-deep")


def _duplicate_key(rng: random.Random, request: FuzzRequest) -> None:
    key = rng.choice(["action", "installation", "repository"])
    value = rng.choice(WEIRD_VALUES)
    entry = json.dumps(key) + ": " + json.dumps(value)
    body = request.body.strip()
    if not body.startswith(b"{") or not body.endswith(b"}"):
        return
    if rng.random() < 0.5:
        request.body = b"{" + entry.encode() + b", " + body[1:]
        request.label.append(f"dup-first:{key}")
    else:
        request.body = body[:-1] + b", " + entry.encode() + b"}"
        request.label.append(f"dup-last:{key}")


def _bad_bytes(rng: random.Random, request: FuzzRequest) -> None:
    kind = rng.choice(["invalid-utf8", "bom", "utf16", "truncate", "flip", "empty", "spaces"])
    body = request.body
    if kind == "invalid-utf8":
        at = body.find(b'"', rng.randrange(max(1, len(body))))
        body = body[: at + 1] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"]) + body[at + 1 :]
    elif kind == "bom":
        body = b"\xef\xbb\xbf" + body
    elif kind == "utf16":
        body = body.decode("utf-8", "replace").encode("utf-16")
    elif kind == "truncate":
        body = body[: rng.randrange(max(1, len(body)))]
    elif kind == "flip":
        mutable = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            if mutable:
                mutable[rng.randrange(len(mutable))] = rng.randrange(256)
        body = bytes(mutable)
    else:
        body = b"" if kind == "empty" else b"   "
    request.body = body
    request.label.append(kind)


def _event_header(rng: random.Random, request: FuzzRequest) -> None:
    value = rng.choice(EVENT_HEADERS)
    # An empty value and no header at all are different requests; send both.
    request.set_header("X-GitHub-Event", None if not value and rng.random() < 0.5 else value)
    request.label.append(f"event={value!r:.16}")


def _delivery_header(rng: random.Random, request: FuzzRequest) -> None:
    value = rng.choice(["", " ", "x" * 200, "x" * 201, "d\x00", "d\u00e9", "d\udcff", " spaced "])
    request.set_header("X-GitHub-Delivery", value)
    request.label.append(f"delivery={value!r:.16}")


def _content_type(rng: random.Random, request: FuzzRequest) -> None:
    value = rng.choice(
        [None, "text/plain", "APPLICATION/JSON", "application/json; charset=utf-16", "\u00e9"]
    )
    request.set_header("Content-Type", value)
    request.label.append(f"content-type={value!r}")


def _content_encoding(rng: random.Random, request: FuzzRequest) -> None:
    # The server inflates these before the handler sees the body; garbage must not be a 5xx.
    value = rng.choice(["gzip", "deflate", "br", "identity", "x-unknown"])
    if rng.random() < 0.5:
        request.body = gzip.compress(request.body)
        request.label.append(f"content-encoding={value}+gzipped")
    else:
        request.label.append(f"content-encoding={value}")
    request.set_header("Content-Encoding", value)


def _signature(rng: random.Random, request: FuzzRequest) -> None:
    kind = rng.choice(["missing", "wrong", "sha1", "non-ascii", "upper", "empty", "twice"])
    request.resign = False
    digest = hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    values = {
        "missing": None,
        "wrong": sign(request.body, "not-the-secret"),
        "sha1": "sha1=" + hmac.new(SECRET.encode(), request.body, hashlib.sha1).hexdigest(),
        "non-ascii": "sha256=" + digest[:-1] + "\u00e9",
        "upper": "sha256=" + digest.upper(),
        "empty": "",
    }
    if kind == "twice":
        request.headers.append(("X-Hub-Signature-256", sign(request.body)))
        request.headers.append(("X-Hub-Signature-256", sign(request.body, "not-the-secret")))
    else:
        request.set_header("X-Hub-Signature-256", values[kind])
    request.label.append(f"signature:{kind}")


BODY_MUTATIONS: tuple[Mutation, ...] = (
    _field(("action",)),
    _field(("installation",)),
    _field(("installation", "id")),
    _field(("installation", "id")),
    _field(("repository",)),
    _field(("repository", "full_name")),
    _field(("repository", "full_name")),
    _not_an_object,
    _deep,
    _deep,
    _unclosed_deep,
    _duplicate_key,
    _duplicate_key,
    _bad_bytes,
    _bad_bytes,
)
HEADER_MUTATIONS: tuple[Mutation, ...] = (
    _event_header,
    _delivery_header,
    _content_type,
    _content_encoding,
    _signature,
)


class Mutator:
    """Deterministic stream of hostile requests: the same seed gives the same requests."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._examples = all_examples()
        self._issued: list[str] = []

    def _delivery_id(self) -> str:
        if self._issued and self._rng.random() < 0.08:
            return self._rng.choice(self._issued)  # a redelivery
        delivery_id = f"fuzz-{self._rng.getrandbits(64):016x}"
        self._issued.append(delivery_id)
        return delivery_id

    def one(self) -> FuzzRequest:
        event, _name, body = self._rng.choice(self._examples)
        request = FuzzRequest(
            headers=[
                ("Content-Type", "application/json"),
                ("X-GitHub-Event", event),
                ("X-GitHub-Delivery", self._delivery_id()),
                ("User-Agent", "GitHub-Hookshot/fuzz"),
            ],
            body=body,
            label=[f"{event}/{_name}"],
        )
        # A few stay unmutated: the control group that must be 202 or 200.
        count = self._rng.choice([0, 1, 1, 1, 2, 2, 3])
        for _ in range(count):
            pool = BODY_MUTATIONS if self._rng.random() < 0.75 else HEADER_MUTATIONS
            self._rng.choice(pool)(self._rng, request)
        if request.resign and self._rng.random() < 0.97:
            request.set_header("X-Hub-Signature-256", sign(request.body))
        elif request.resign:
            request.label.append("not-resigned")
            request.set_header("X-Hub-Signature-256", sign(body))
        return request

    def many(self, count: int) -> Iterator[FuzzRequest]:
        for _ in range(count):
            yield self.one()


def _member(parent: Any, key: str) -> Any:
    """`parent[key]`; a parent that is not an object stands for itself, so that storing
    anything but a refusal for it shows up as a mismatch."""
    if parent is None:
        return None
    return parent.get(key) if isinstance(parent, dict) else parent


def received_body(request: FuzzRequest) -> bytes:
    """The body as the handler reads it: aiohttp inflates gzip and deflate on the way in."""
    encoding = (request.header("Content-Encoding") or "").strip().lower()
    if encoding == "gzip":
        return gzip.decompress(request.body)
    if encoding == "deflate":
        return zlib.decompress(request.body)
    return request.body


def expected_fields(request: FuzzRequest) -> dict[str, Any]:
    """What a 202 for `request` must be stored with: the body read as the worker reads it."""
    body = received_body(request)
    payload = json.loads(body)
    return {
        "event": (request.header("X-GitHub-Event") or "").strip(),
        "action": _member(payload, "action"),
        "installation_id": _member(_member(payload, "installation"), "id"),
        "repository": _member(_member(payload, "repository"), "full_name"),
        "body": body,
    }


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class _Collect(asyncio.Protocol):
    """Keeps every byte received, even when the connection then ends with a reset: a server
    that answers a malformed request and closes before reading the body resets the
    connection, and a stream reader would raise instead of handing over that answer."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.data += data

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def send_raw(host: str, port: int, path: str, request: FuzzRequest) -> RawResponse:
    """POST as one HTTP/1.1 request on its own connection; status 0 if no answer came."""
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Length: {len(request.body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in request.headers),
    ]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_connection(_Collect, host, port)
    try:
        transport.write(head + request.body)
        await protocol.done
    finally:
        transport.close()
    head_bytes, _, body = bytes(protocol.data).partition(b"\r\n\r\n")
    parts = head_bytes.split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return RawResponse(status, body)
