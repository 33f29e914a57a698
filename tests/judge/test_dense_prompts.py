"""Text that tokenizes densely (CJK, digits, encoded runs, single letters) against a
server that cuts an over-long prompt without an error (Ollama): the fit counts dense text
as the tokens it may take, and a prompt the server read less of than it holds at the
least is never a whole read. The fake Ollama on loopback, with a tokenizer that reads
such text as a real one does."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import httpx
import pytest

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.context_fit import (
    CHARS_PER_TOKEN,
    TEMPLATE_TOKENS,
    cut_prompt,
    dense_chars,
    least_tokens,
    weighted_chars,
)
from bot.judge.records import JudgedFile, TaskSpec, Verdict
from tests.support.fakes import local_servers
from tests.support.local_trial import settings_for


@pytest.mark.parametrize(
    ("text", "wide", "encoded"),
    [
        ("plain prose, the words of it", 0, 0),
        ("中文字符", 4, 0),
        ("é and 😀", 2, 0),
        ("p95 in 2024", 6, 0),
        ("deadbeef00112233aabbccdd", 0, 24),  # hex: every character
        ("QWxhZGRpbjpvcGVuIHNlc2FtZQ", 0, 26),  # base64 without a digit: its case changes
        ("x" * 40, 0, 0),  # a run, but no encoding
        ("getUserAccountSettingsById", 0, 0),  # camelCase is an identifier
        ("src/bot/judge/engine/context", 0, 0),  # a path
        ("padding+signs=", 0, 0),  # too short for a run
    ],
)
def test_dense_chars(text: str, wide: int, encoded: int) -> None:
    assert dense_chars(text) == (wide, encoded)


def test_weighted_chars_counts_dense_text_at_its_tokens() -> None:
    assert weighted_chars("plain") == 5
    # a non-ASCII character or a digit is a token's worth of characters, an encoded
    # character half of one
    assert weighted_chars("中文") == weighted_chars("12") == math.ceil(2 * CHARS_PER_TOKEN)
    assert weighted_chars("a1" * 8) == math.ceil(16 * CHARS_PER_TOKEN / 2)


@pytest.mark.parametrize(
    ("text", "least"),
    [
        ("Hello, world!", 4),  # "Hello" "," " world" "!"
        ("a b c d", 4),
        ("123456", 2),  # digits in threes
        ("it's", 2),
        ("", 0),
        ("中文字符", 1),  # one run of letters: no floor for CJK (the fit counts it)
    ],
)
def test_least_tokens(text: str, least: int) -> None:
    assert least_tokens([{"role": "user", "content": text}]) == least


def test_cut_prompt_allows_for_a_cached_prefix_before_the_nonce() -> None:
    before = "s" * 100
    messages = [
        {"role": "system", "content": before + "NONCE"},
        {"role": "user", "content": "a " * 2000},
    ]
    least = least_tokens(messages)
    cacheable = 100 + TEMPLATE_TOKENS
    assert cut_prompt(messages, "NONCE", least) is None
    assert cut_prompt(messages, "NONCE", least - cacheable) is None  # the prefix was cached
    assert cut_prompt(messages, "NONCE", least - cacheable - 1) == least
    assert cut_prompt(messages, "NONCE", 0) is None  # no count: nothing to say
    # without the nonce, the whole prompt may have been cached
    assert cut_prompt(messages, "ELSEWHERE", 1) is None


def _dense_count(text: str) -> int:
    """A tokenizer as real ones read dense text: a token per non-ASCII character and per
    digit, a token per piece (`least_tokens`) at least, four letters a token otherwise."""
    plain = sum(1 for c in text if c.isascii() and not c.isdigit())
    wide, digits = sum(not c.isascii() for c in text), sum(c.isdigit() for c in text)
    pieces = least_tokens([{"content": text}])
    return max(pieces, -(-plain // 4) + wide + digits)


class _DenseOllama(local_servers.OllamaServer):
    """Ollama's cut (the fake's rule: its first tokens and its last, to a little over half
    the context) in the tokens `_dense_count` reads."""

    def evaluated(self, prompt: str) -> str:
        if _dense_count(prompt) < self.num_ctx:
            return prompt
        head = prompt[:16]
        room = self.num_ctx - (self.num_ctx - 5) // 2 - _dense_count(head)
        low, high = 16, len(prompt)
        while low < high:  # the longest tail that fits the room
            middle = (low + high) // 2
            if _dense_count(prompt[middle:]) <= room:
                high = middle
            else:
                low = middle + 1
        return head + prompt[low:]


@pytest.fixture
def dense_tokenizer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(local_servers, "count_tokens", _dense_count)
    yield


def _request(content: str) -> JudgeRequest:
    return JudgeRequest(
        task=TaskSpec(task_id="t", description="Write the report", acceptance="Readable"),
        files=[JudgedFile(path="docs/report.md", content=content)],
        scope="cli:/dense",
    )


def _lines(line: Callable[[int], str], chars: int) -> str:
    text, n = "# Report\n\n", 0
    while len(text) < chars:
        text += line(n) + " <!-- quality: good -->\n\n"
        n += 1
    return text


CJK = "延迟在缓存变更后上升。回滚后九十五分位在一天内恢复。"


@pytest.mark.usefixtures("dense_tokenizer")
@pytest.mark.parametrize(
    "content",
    [
        _lines(lambda n: CJK, 6000),
        _lines(lambda n: " ".join(f"{n * 7919 + i:06d}" for i in range(40)), 9000),
    ],
    ids=["cjk", "digits"],
)
async def test_dense_text_is_fitted_so_ollama_cuts_nothing(content: str) -> None:
    async with _DenseOllama() as server, httpx.AsyncClient() as client:
        engine = JudgeEngine.from_settings(settings_for(server), client, None)
        record = await engine.judge(_request(content))
    assert server.chats and not any(call.truncated for call in server.calls)
    assert record.final_decision is not Verdict.UNDETERMINED or record.mode == "partial-view"


@pytest.mark.usefixtures("dense_tokenizer")
async def test_a_prompt_ollama_cut_is_never_a_whole_read() -> None:
    """Single letters read as a token each, more than the fit counts: Ollama cuts the
    prompt (its instructions first) and says only how much it read, fewer tokens than the
    prompt holds at the least. The round is asked again, fitted to that; an accept never
    rests on a cut prompt."""
    content = _lines(lambda n: ", ".join("qzxkvjwp" * 8), 15000)
    ollama = _DenseOllama(modelfile_num_ctx=8192)
    async with ollama as server, httpx.AsyncClient() as client:
        engine = JudgeEngine.from_settings(settings_for(server), client, None)
        record = await engine.judge(_request(content))
    cut = [call for call in server.calls if call.truncated]
    assert len(cut) == 1, "the test needs a prompt the server cut"
    # deep's first attempt was cut; its second, fitted to the least the prompt held, was
    # not, and read part of the file: the accept is a partial view's
    assert [c.attempts for c in record.calls] == [1, 2]
    assert server.calls[-1].truncated is False
    assert record.final_decision is Verdict.UNDETERMINED and record.mode == "partial-view"
