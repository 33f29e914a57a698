"""How many characters of the change a judge reads when its model's context is known. Pure.

A tier reads at most `max_chars` characters of the change (`JUDGE_<TIER>_MAX_CHARS`). A
model's context holds the whole prompt and the answer, so when the context is known (a
setting, or its server said: bot/judge/providers/server_facts.py) the tier reads less
when less fits:

    prompt room  = (context - answer reserve - TEMPLATE_TOKENS) x chars per token
    file budget  = prompt room - what the prompt holds besides the budget (system
                   message, task texts, fences, the file list, earlier rounds, a retry's
                   note) - the schema a server without json_schema gets in the prompt

The answer reserve is the tier's output-token limit, or an eighth of a small context
(never under `MIN_ANSWER_TOKENS`): a bounded answer takes a few hundred tokens, and a
2,048-token context cannot give 1,024 of them away. Tokens are counted at
`CHARS_PER_TOKEN`, fewer than English prose (about 4) or code (3 to 4) take with current
tokenizers, so a fitted prompt fits; the answer's limit sent is what the context leaves
after the prompt so counted (`answer_tokens`; vLLM refuses a request whose prompt and
limit together pass the context).

What comes off the top is measured, not guessed: `fitted_budget` composes the prompt
(`compose`, with a budget) once with the least budget and once with its answer, and
shrinks by whatever is still over. When a server refuses a fitted prompt as too long
anyway (its tokenizer counted more), `after_overflow` learns from what it said: its
context, and its own count of the prompt, which gives this model's characters per token;
a refusal without numbers halves the budget. The round asks once more with that.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.judge.engine.prompts import Prompt
from bot.judge.providers.server_facts import LEAST_CONTEXT, REFUSAL

CHARS_PER_TOKEN = 3.5
TEMPLATE_TOKENS = 64
"""The chat template's tokens (role markers, begin and end tokens) and a margin."""
MIN_ANSWER_TOKENS = 256
ANSWER_SHARE = 8
"""At most this fraction of a small context is kept for the answer (see the docstring)."""
SHRINK_MARGIN = 0.9
"""After a server counted the prompt itself, what fits is believed at this share."""
_INSTRUCTION_CHARS = 120
"""The sentence around the schema a provider appends to the system message."""
RETRY_NOTE_CHARS = 1000
"""The most a retry's note adds (rounds.retry_note: our words, at most 300 quoted, fenced),
for plans made before any attempt (bot/judging/windows.py): the attempt measures its own."""


@dataclass(frozen=True)
class TierFit:
    """What one judgment knows of a seat's context: `tokens` (None: unknown, the tier
    reads its configured characters), where that came from (`source`), the characters a
    token is counted at, and a cap on the file budget after an overflow without numbers."""

    tokens: int | None
    source: str
    chars_per_token: float = CHARS_PER_TOKEN
    cap: int | None = None


def answer_reserve(context_tokens: int, max_output_tokens: int) -> int:
    """Tokens of the context kept for the answer."""
    return min(max_output_tokens, max(MIN_ANSWER_TOKENS, context_tokens // ANSWER_SHARE))


def prompt_room(fit: TierFit, max_output_tokens: int) -> int | None:
    """Characters of prompt the context takes (None: no context known)."""
    if fit.tokens is None:
        return None
    tokens = fit.tokens - answer_reserve(fit.tokens, max_output_tokens) - TEMPLATE_TOKENS
    return max(0, int(tokens * fit.chars_per_token))


def schema_chars(schema: Mapping[str, Any]) -> int:
    """What a provider adds to the prompt when the server takes no json_schema: counted
    always, since which format a server takes is learned only by asking."""
    return len(json.dumps(schema, sort_keys=True)) + _INSTRUCTION_CHARS


_LONG_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")
_CASE_CHANGE = re.compile(r"[a-z][A-Z]|[A-Z][a-z]")
_DIGITS = "0123456789"


def _encoded(run: str) -> bool:
    """Whether a long run reads as encoded data (base64, hex, a hash: about a token a
    character), not a word or an identifier: it holds a digit or base64's signs, or
    changes case more often than camelCase does."""
    if "+" in run or "=" in run or any(c.isdigit() for c in run):
        return True
    return len(_CASE_CHANGE.findall(run)) * 4 > len(run)


def dense_chars(text: str) -> tuple[int, int]:
    """The characters of `text` a tokenizer reads densely, whoever wrote them: `wide`,
    up to a token each (non-ASCII characters: CJK, emoji, accents; digits: Qwen and
    SentencePiece read each alone), and `encoded`, the characters of long encoded runs
    (base64, hex, a hash: measured at 1.5 to 2.5 characters a token)."""
    wide = len(text) - len(text.encode("ascii", "ignore"))
    wide += sum(text.count(digit) for digit in _DIGITS)
    encoded = 0
    for run in _LONG_RUN.finditer(text):
        word = run.group()
        if _encoded(word):
            encoded += len(word)
            wide -= sum(word.count(digit) for digit in _DIGITS)
    return wide, encoded


def weighted_chars(text: str) -> int:
    """`text`'s length with dense characters (`dense_chars`) counted as the characters of
    the tokens they may take at `CHARS_PER_TOKEN`: a wide character a token's worth, an
    encoded one half a token's. Prose is counted at 3.5 characters a token; dense text so
    counted is what Ollama would otherwise cut without a word."""
    wide, encoded = dense_chars(text)
    return len(text) + math.ceil(wide * (CHARS_PER_TOKEN - 1) + encoded * (CHARS_PER_TOKEN / 2 - 1))


def prompt_chars(prompt: Prompt) -> int:
    """The prompt's characters as the fit counts them (`weighted_chars`)."""
    return sum(weighted_chars(message.get("content", "")) for message in prompt.messages)


_PRE_TOKEN = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)"
    r"|(?:[^\r\n\w]|_)?[^\W\d_]+"
    r"|\d{1,3}"
    r"| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)"
    r"|\s+"
)
"""The pre-tokenizer of the byte-level BPE tokenizers local models use (Llama 3, Qwen 2,
GPT-4's): no token crosses a piece, so a text holds at least as many tokens as pieces
(Qwen's single digits and SentencePiece's script boundaries split more, never less)."""


def least_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """The fewest tokens the messages' texts can be (`_PRE_TOKEN`)."""
    return sum(len(_PRE_TOKEN.findall(m.get("content", ""))) for m in messages)


def cut_prompt(messages: Sequence[Mapping[str, str]], nonce: str, reported: int) -> int | None:
    """The least tokens the prompt holds when the server's `reported` count of it says it
    read less (it cut the prompt: Ollama does, without an error), else None. A server
    that reuses a cached prefix may count only the rest; calls share no prefix past the
    call's nonce, so the bytes before it (a token is at least a byte) are allowed for."""
    if reported <= 0:
        return None
    text = "".join(m.get("content", "") for m in messages)
    before = text.find(nonce)
    cacheable = len(text[: before if before >= 0 else len(text)].encode()) + TEMPLATE_TOKENS
    least = least_tokens(messages)
    return least if reported + cacheable < least else None


def fixed_chars(prompt: Prompt) -> int:
    """What the budget spends before the files: the earlier verdicts and each CI line
    (with a red check's first characters), as `compose_messages` deducts them."""
    return sum(p.sent + (p.kind == "ci") for p in prompt.shown if p.kind in ("earlier", "ci"))


def fitted_budget(
    compose: Callable[[int], Prompt], *, room: int | None, max_chars: int, extra: int
) -> int:
    """The file budget (`max_chars` for `compose_messages`) whose prompt, with `extra`
    characters more, fits `room`; `max_chars` when no room is known; 0 when not even
    the prompt without files fits."""
    if room is None:
        return max_chars
    least = compose(1)
    base = prompt_chars(least)
    budget = min(max_chars, room - extra - (base - fixed_chars(least)))
    for _ in range(3):
        if budget < 1:
            return 0
        weighed = prompt_chars(compose(budget))
        over = weighed + extra - room
        if over <= 0:
            return budget
        # Dense files weigh more than a character a character: shrink by what they weigh.
        weight = max(1.0, (weighed - base) / max(1, budget - 1))
        budget -= math.ceil(over / weight)
    return max(0, budget)


def answer_tokens(fit: TierFit, max_output_tokens: int, sent_chars: int) -> int:
    """The answer's limit to send: the tier's, or what the context leaves after a prompt
    of `sent_chars` characters (never under a tenth of the tier's, so a miscount still
    asks for an answer: the server refuses or cuts it, and the round says so)."""
    if fit.tokens is None:
        return max_output_tokens
    used = math.ceil(sent_chars / fit.chars_per_token) + TEMPLATE_TOKENS
    return max(max_output_tokens // 10, min(max_output_tokens, fit.tokens - used))


def after_overflow(
    fit: TierFit,
    *,
    context_tokens: int | None,
    prompt_tokens: int | None,
    sent_chars: int,
    budget: int,
) -> TierFit:
    """What to believe after a server refused a prompt of `sent_chars` characters, whose
    files had `budget`, as longer than its context (the numbers it gave, each maybe None)."""
    if context_tokens is not None and context_tokens < LEAST_CONTEXT:
        context_tokens = None  # misread: no context runs a judge's prompt in that
    learned = replace(fit, tokens=context_tokens or fit.tokens)
    if context_tokens is not None:
        learned = replace(learned, source=REFUSAL)
    if prompt_tokens and sent_chars:
        measured = sent_chars / prompt_tokens * SHRINK_MARGIN
        learned = replace(learned, chars_per_token=min(fit.chars_per_token, measured))
    if learned.tokens is None or prompt_tokens is None:
        # Nothing to compute the fit from: half of what was too much.
        learned = replace(learned, cap=budget // 2)
    return learned
