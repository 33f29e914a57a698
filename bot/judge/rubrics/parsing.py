"""Turning a model's reply into a validated `RubricAnswer`, or refusing to.

Rules (any other input is a `ParseError`, which the engine records as an
undetermined round; a score is never guessed):

* Extraction (`extract_json_object`): the whole reply is tried as JSON first;
  then a reasoning model's thinking is set aside (`answer_text`), and in what
  is left each fenced block (```json ... ``` or bare ```), then every top-level
  `{...}` object embedded in prose. A reply whose whole text is JSON but not an
  object (an array, a number) is refused rather than searched.
* When an outer object is malformed (a reply cut off by the token limit, a
  trailing comma), objects nested in it are still found: a complete `scores`
  object there is what the model wrote, and decides; nothing is filled in. An
  object never closed is passed over unread, so not even a huge number or deep
  nesting in it refuses the reply. The search is linear in the reply's length: a
  reply whose malformed objects would cost more than `_FAILED_SPAN_BUDGET` times
  its length to decode, or that holds more than `_FAILED_DECODES_LIMIT` of them
  (each a `{` and its `}` that fail to decode), is refused: only text written to
  stall the search comes near.
* Among several objects, the ones carrying a verdict key (`scores`, `verdict`,
  `dimensions`, `pass`, or a rubric dimension) are candidates. Exactly one
  distinct candidate must remain: two different verdict-like objects are
  ambiguous (a model drafting twice, or quoting an object out of the file under
  review) and are refused.
* Thinking (`<think>...</think>`, also `<thinking>` and `<reasoning>`, as
  vLLM, Ollama and DeepSeek pass it through in the content) never decides, even
  when it holds JSON drafts: only text outside it counts, and of that the LAST
  stretch holding a `{` (a model may answer, think again, and answer anew). A
  closing tag without its opening (the chat template opened the thinking)
  makes everything before it thinking; an opening tag never closed (the token
  limit cut the thinking off) makes everything after it thinking. A reply that
  is all thinking is refused as having no answer.
* Numbers may be JSON numbers or numeric strings ("4", "4.0", " 0.85 ").
  Booleans, NaN, infinities, fractions like "4/5" and words are refused.
* Scores may be nested (`{"scores": {...}}`, `{"dimensions": {...}}`, or a
  per-dimension `{"score": n}`) or flat at top level; keys are matched
  case-insensitively with spaces and hyphens read as underscores. Nested and
  flat values that disagree are refused. A missing dimension is refused.
* A missing average is computed. A reported average that disagrees with the
  scores by more than `AVERAGE_TOLERANCE` is replaced by the computed one and the
  reported value is kept (`reported_average`, in the record's `extra["reported_average"]`).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.judge.rubrics.base import E, Rubric, RubricAnswer

AVERAGE_TOLERANCE = 0.01
DEFAULT_VERDICT_KEYS: frozenset[str] = frozenset({"scores", "verdict", "dimensions", "pass"})

# Possessive: with an empty info string both space runs could share a long run of spaces
# in quadratically many ways before the newline check failed.
_ANSWER_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*+)[ \t]*+\r?\n(.*?)```", re.DOTALL)
_THINK_TAG = re.compile(r"<(/?)(?:think|thinking|reasoning)\s*>", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_STRUCTURE = re.compile(r'["{}]')
_NOT_STRUCTURE = re.compile(r'[^"{}]++')
# Only from the start of a backslash run (the lookbehind), so a long run is read once.
_ESCAPED_QUOTE = re.compile(r'(?<!\\)(?:\\\\)*+\\"')
# What every JSON object starts with: a `{` before anything else can never decode, so
# braces in prose and code are passed over without paying for a decoding error.
_OBJECT_OPENING = re.compile(r'\{[ \t\n\r]*+["}]')
# Decoding a candidate that fails costs up to its length, and nested failing candidates
# (tried so that objects inside a malformed one are still found) could add up to the
# square of the reply's length. A real reply's malformed objects nest a few levels deep,
# so they cost a few times its length; the floor keeps short replies clear of the limit.
_FAILED_SPAN_BUDGET = 16
_FAILED_SPAN_FLOOR = 100_000
# Each failed decode also costs a few microseconds of raising, however short: a reply of
# nothing but small malformed objects took seconds. Real replies hold a handful.
_FAILED_DECODES_LIMIT = 1000


class ParseError(ValueError):
    """The reply holds no single valid verdict object for the rubric."""


def norm_key(key: str) -> str:
    """`Missing Items`, `missing-items` and `missingItems` all become `missing_items`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key.strip())
    return re.sub(r"[\s\-]+", "_", spaced).lower()


def normalized(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Keys normalised; two keys that collide after normalising are refused."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            raise ParseError("object keys must be strings")
        nk = norm_key(key)
        if nk in out and out[nk] != value:
            raise ParseError(f"conflicting values for key {nk!r}")
        out[nk] = value
    return out


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        raise _unreadable(exc) from None


def _unreadable(exc: ValueError | RecursionError) -> ParseError:
    """The decoder's failures that are not syntax errors: nesting past the recursion
    limit, or an integer past Python's 4300-digit conversion limit. Either refuses the
    reply outright; searching on inside it would only repeat the failure per brace."""
    if isinstance(exc, ParseError):
        return exc
    if isinstance(exc, RecursionError):
        return ParseError("JSON nested too deeply")
    return ParseError(f"unreadable JSON value: {str(exc).split(';', 1)[0]}")


def _refuse_constant(name: str) -> Any:
    raise ParseError(f"non-finite number {name} is not allowed")


def _structure_tokens(text: str) -> tuple[list[int], list[str]]:
    """Where `{`, `}` and `"` stand in `text`, and which each is; an escaped quote (after an
    odd run of backslashes) is `'`, as it cannot close a string, though outside one it opens
    one."""
    positions = [token.start() for token in _STRUCTURE.finditer(text)]
    kinds = list(_NOT_STRUCTURE.sub("", text))
    for escaped in _ESCAPED_QUOTE.finditer(text):
        kinds[bisect.bisect_left(positions, escaped.end() - 1)] = "'"
    return positions, kinds


def _level_ends(kinds: list[str]) -> list[int]:
    """`ends[t]`: reading on from token `t` outside any string (a quote jumps to the next
    unescaped one, a `{` to its own end), the `}` that closes the reading, or -1; the `}`
    matching a `{` at `t` is `ends[t + 1]`.

    Filled from the end, each entry from entries after it, so every `{` gets its `}` in one
    linear pass. Scanning forward from each `{` instead re-reads the same text once per
    brace (a `{` inside a string for one start is outside for another), quadratic on
    hostile replies."""
    count = len(kinds)
    ends = [-1] * (count + 1)
    next_closing_quote = -1
    for index in range(count - 1, -1, -1):
        kind = kinds[index]
        if kind == "}":
            ends[index] = index
        elif kind == "{":
            inner = ends[index + 1]
            ends[index] = -1 if inner < 0 else ends[inner + 1]
        else:
            ends[index] = -1 if next_closing_quote < 0 else ends[next_closing_quote + 1]
            if kind == '"':
                next_closing_quote = index
    return ends


def _embedded_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object that decodes cleanly somewhere in `text`.

    Each `{` is tried in turn, decoding only as far as its matching `}` (decoding the rest
    of the reply instead made every failure cost the reply's length): one that decodes is
    kept and the search goes on after it; one that does not is passed over, so the `{`s
    inside it are still tried; one whose `}` never comes cannot be an object and is not
    decoded at all."""
    decoder = json.JSONDecoder(parse_constant=_refuse_constant)
    positions, kinds = _structure_tokens(text)
    ends = _level_ends(kinds)
    budget = _FAILED_SPAN_BUDGET * len(text) + _FAILED_SPAN_FLOOR
    failures_left = _FAILED_DECODES_LIMIT
    found: list[dict[str, Any]] = []
    resume = 0
    for index, kind in enumerate(kinds):
        start = positions[index]
        close = ends[index + 1] if kind == "{" and start >= resume else -1
        if close < 0 or not _OBJECT_OPENING.match(text, start):
            continue
        end = positions[close] + 1
        try:
            value = decoder.decode(text[start:end])
        except (json.JSONDecodeError, ParseError):
            budget -= end - start
            failures_left -= 1
            if budget < 0 or failures_left < 0:
                raise ParseError("too much of the reply is malformed JSON to search") from None
            continue
        except (ValueError, RecursionError) as exc:
            raise _unreadable(exc) from None
        if isinstance(value, dict):
            found.append(value)
        resume = end
    return found


def answer_text(text: str) -> str:
    """What a reasoning model meant as its answer: the last stretch outside its thinking
    that holds a `{` (else the last non-blank stretch); `text` itself when it has no
    thinking tags, "" when it is all thinking (rules in the module docstring)."""
    outside: list[str] = []
    depth = 0
    start = 0
    tagged = False
    for tag in _THINK_TAG.finditer(text):
        tagged = True
        if not tag.group(1):
            if depth == 0:
                outside.append(text[start : tag.start()])
            depth += 1
        elif depth > 0:
            depth -= 1
            start = tag.end()
        else:
            outside.clear()
            start = tag.end()
    if not tagged:
        return text
    if depth == 0:
        outside.append(text[start:])
    stretches = [part for part in outside if part.strip()]
    with_object = [part for part in stretches if "{" in part]
    chosen = with_object or stretches
    return chosen[-1].strip() if chosen else ""


def _is_candidate(obj: Mapping[str, Any], keys: frozenset[str]) -> bool:
    return any(isinstance(k, str) and norm_key(k) in keys for k in obj)


def _pick(objects: Iterable[dict[str, Any]], keys: frozenset[str]) -> dict[str, Any] | None:
    """The one distinct verdict-like object, None without any. Stops at the first that
    differs from the first: counting every distinct one meant comparing each with all the
    ones before it."""
    chosen: dict[str, Any] | None = None
    for obj in objects:
        if not _is_candidate(obj, keys):
            continue
        if chosen is None:
            chosen = obj
        elif obj != chosen:
            raise ParseError("two or more different verdict objects in the reply; ambiguous")
    return chosen


def _fenced_objects(text: str) -> list[dict[str, Any]]:
    """The objects in markdown fences: a fence's whole body, else objects inside it."""
    fenced: list[dict[str, Any]] = []
    for match in _ANSWER_FENCE.finditer(text):
        body = match.group(2).strip()
        try:
            value = _loads(body)
        except json.JSONDecodeError:
            fenced.extend(_embedded_objects(body))
            continue
        if isinstance(value, dict):
            fenced.append(value)
    return fenced


def extract_json_object(
    text: str, verdict_keys: Iterable[str] = DEFAULT_VERDICT_KEYS
) -> dict[str, Any]:
    """The single verdict object in a model reply."""
    keys = frozenset(norm_key(k) for k in verdict_keys)
    stripped = text.strip()
    if not stripped:
        raise ParseError("empty reply")
    try:
        whole = _loads(stripped)
    except json.JSONDecodeError:
        pass
    else:
        if not isinstance(whole, dict):
            raise ParseError(f"reply is JSON {type(whole).__name__}, not an object")
        return whole

    stripped = answer_text(stripped)
    if not stripped:
        raise ParseError(
            "the reply is all thinking and no answer (a cut-off reply: the tier's output-token "
            "limit may be too low for a reasoning model)"
        )
    picked = _pick(_fenced_objects(stripped), keys)
    if picked is not None:
        return picked

    embedded = _embedded_objects(stripped)
    picked = _pick(embedded, keys)
    if picked is not None:
        return picked
    if len(embedded) == 1:
        return embedded[0]
    if embedded:
        raise ParseError("several JSON objects in the reply and none looks like a verdict")
    raise ParseError("no JSON object in the reply")


def to_number(value: Any, what: str) -> float:
    """A finite number from a JSON number or numeric string; never a bool."""
    if isinstance(value, bool):
        raise ParseError(f"{what}: a boolean is not a number")
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            raise ParseError(f"{what}: out of range") from None
    if isinstance(value, float):
        number = value
    elif isinstance(value, str):
        candidate = value.strip()
        if not _NUMBER.fullmatch(candidate):
            raise ParseError(f"{what}: {value!r} is not a number")
        number = float(candidate)
    else:
        raise ParseError(f"{what}: {type(value).__name__} is not a number")
    if not math.isfinite(number):
        raise ParseError(f"{what}: not finite")
    return number


def to_int_score(value: Any, what: str, low: int, high: int) -> int:
    number = to_number(value, what)
    if not number.is_integer():
        raise ParseError(f"{what}: {number} is not a whole score")
    score = int(number)
    if not low <= score <= high:
        raise ParseError(f"{what}: {score} is outside {low}-{high}")
    return score


def to_unit_score(value: Any, what: str) -> float:
    number = to_number(value, what)
    if not 0.0 <= number <= 1.0:
        raise ParseError(f"{what}: {number} is outside 0.0-1.0")
    return number


def _unwrap_score(value: Any) -> Any:
    if isinstance(value, Mapping):
        inner = normalized(value)
        for key in ("score", "value", "rating"):
            if key in inner:
                return inner[key]
        raise ParseError("a nested score object needs a 'score' field")
    return value


def _same_value(a: Any, b: Any) -> bool:
    try:
        return to_number(a, "score") == to_number(b, "score")
    except ParseError:
        return bool(a == b)


def raw_scores(
    obj: Mapping[str, Any], dimensions: Iterable[str], nested_keys: Iterable[str] = ("scores",)
) -> dict[str, Any]:
    """Unvalidated score values for each dimension, nested or flat."""
    top = normalized(obj)
    nested: dict[str, Any] = {}
    for key in nested_keys:
        block = top.get(key)
        if block is None:
            continue
        if not isinstance(block, Mapping):
            raise ParseError(f"{key!r} must be an object")
        for k, v in normalized(block).items():
            if k in nested and nested[k] != v:
                raise ParseError(f"conflicting nested values for {k!r}")
            nested[k] = v
    out: dict[str, Any] = {}
    for dim in dimensions:
        flat_present = dim in top
        if dim in nested:
            value = _unwrap_score(nested[dim])
            if flat_present and not _same_value(_unwrap_score(top[dim]), value):
                raise ParseError(f"{dim}: nested and top-level scores disagree")
            out[dim] = value
        elif flat_present:
            out[dim] = _unwrap_score(top[dim])
        else:
            raise ParseError(f"missing score for {dim!r}")
    return out


def _first_given(obj: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, Any] | None:
    """The first of `keys` the object gives a value other than null, with that value."""
    top = normalized(obj)
    for key in keys:
        value = top.get(key)
        if value is not None:
            return key, value
    return None


def text_field(obj: Mapping[str, Any], *keys: str) -> str:
    given = _first_given(obj, keys)
    if given is None:
        return ""
    value = given[1]
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "\n".join(str_item(v) for v in value)
    return json.dumps(value, ensure_ascii=False)


def str_item(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, Mapping):
        inner = normalized(value)
        for key in ("description", "text", "item", "suggestion"):
            if isinstance(inner.get(key), str):
                return str(inner[key]).strip()
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def string_list(obj: Mapping[str, Any], *keys: str) -> list[str]:
    given = _first_given(obj, keys)
    if given is None:
        return []
    key, value = given
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        return [s for s in (str_item(v) for v in value) if s]
    raise ParseError(f"{key!r} must be a list of strings")


def reported_average(
    reported: Any, computed: float, tolerance: float = AVERAGE_TOLERANCE
) -> float | str | None:
    """What the answer keeps of the average the judge reported beside the `computed` one,
    which always decides: None when it agrees or is absent, the number when it is off,
    the text it wrote when it is not a number."""
    if reported is None:
        return None
    try:
        value = to_number(reported, "average")
    except ParseError:
        return reported if isinstance(reported, str) else repr(reported)
    return value if abs(value - computed) > tolerance else None


def model_label(obj: Mapping[str, Any], *keys: str) -> str | None:
    top = normalized(obj)
    for key in keys:
        value = top.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
        if isinstance(value, bool):
            return "pass" if value else "fail"
    return None


def parse_answer(text: str, rubric: Rubric[E]) -> RubricAnswer[E]:
    """Extract the verdict object from a reply and validate it against the rubric.

    Raises only `ParseError`: whatever a model writes, the engine sees a failed parse,
    never a crash."""
    try:
        obj = extract_json_object(text, rubric.verdict_keys)
        return rubric.parse(obj)
    except ParseError:
        raise
    except (ValueError, RecursionError, OverflowError) as exc:
        raise ParseError(f"unreadable reply ({type(exc).__name__})") from None
