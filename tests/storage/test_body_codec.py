"""`body_codec`: how SQLite stores a delivery body (schema migration 7)."""

from __future__ import annotations

import json
import random

import lz4.block
import pytest

from bot.storage.base import MAX_BODY_BYTES
from bot.storage.body_codec import (
    DamagedBody,
    UnknownBodyCompression,
    UnreadableBody,
    decode_body,
    encode_body,
)


def pull_request_body(size: int) -> bytes:
    """JSON shaped like a webhook's, about `size` bytes, non-ASCII text included."""
    users = [
        {"login": f"user-{n}", "id": n, "url": f"https://api.github.com/users/user-{n}"}
        for n in range(size // 60 + 1)
    ]
    document = {"action": "submitted", "review": {"body": "Sieht gut aus ✓ — 見た 🚀"}, "u": users}
    return json.dumps(document, ensure_ascii=False).encode()[:size]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(pull_request_body(29_568), id="29 KB JSON"),
        pytest.param(pull_request_body(3_000_000), id="3 MB JSON"),
        pytest.param("Grüße, 世界 🚀 ".encode() * 500, id="UTF-8"),
        pytest.param(bytes(range(256)) * 40, id="every byte value"),
    ],
)
def test_a_body_lz4_shrinks_is_stored_in_lz4s_block_format(body: bytes) -> None:
    stored, compression = encode_body(body)
    assert compression == "lz4"
    assert len(stored) < len(body)
    # The block format with its defaults: the size prefix, which anyone's lz4 reads.
    assert lz4.block.decompress(stored) == body
    assert decode_body(stored, compression) == body


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{}", id="two bytes"),
        pytest.param(random.Random(7).randbytes(29_568), id="random bytes"),
    ],
)
def test_a_body_lz4_cannot_shrink_is_stored_as_received(body: bytes) -> None:
    stored, compression = encode_body(body)
    assert (stored, compression) == (body, None)
    assert decode_body(stored, compression) == body


def test_a_row_stored_as_received_reads_unchanged() -> None:
    """Rows written before migration 7 have NULL: their bytes are the body, even bytes that
    happen to look like lz4."""
    looks_compressed = lz4.block.compress(b"a" * 1000)
    assert decode_body(looks_compressed, None) == looks_compressed


def test_an_unknown_compression_is_refused_by_name() -> None:
    stored, _ = encode_body(pull_request_body(5000))
    with pytest.raises(UnknownBodyCompression, match=r"'zstd'.*newer version") as refused:
        decode_body(stored, "zstd")
    assert refused.value.compression == "zstd"


@pytest.mark.parametrize(
    ("stored", "reason"),
    [
        (b"", "shorter than its size prefix"),
        (b"\x01\x00", "shorter than its size prefix"),
        (b"\x10\x00\x00\x00garbage", "Decompressor wrote"),
        # A damaged size prefix: decompressing would first allocate 2 GB.
        (b"\xff\xff\xff\x7f" + b"\x00" * 16, "2,147,483,647 bytes, more than any webhook"),
        (lz4.block.compress(b"a" * 1000)[:-3], "corrupt input"),
    ],
)
def test_a_damaged_lz4_block_is_refused_as_damaged(stored: bytes, reason: str) -> None:
    with pytest.raises(DamagedBody, match=reason) as refused:
        decode_body(stored, "lz4")
    assert isinstance(refused.value, UnreadableBody)


def test_the_largest_webhook_body_still_decodes() -> None:
    body = b"x" * MAX_BODY_BYTES
    assert decode_body(*encode_body(body)) == body
