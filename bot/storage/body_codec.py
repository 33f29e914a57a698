"""How SQLite stores a delivery's body (schema migration 7): lz4's block format, or as
received when that would not make it smaller.

The column `delivery_bodies.compression` names the encoding of each row: NULL for a body
stored as received (every row written before migration 7, and bodies lz4 cannot shrink),
`'lz4'` for `lz4.block.compress(body)` with its defaults (the original size in a 4-byte
prefix, which decompression needs). The block format, not the frame format: decompressing
a 29 KB body from a frame took five times as long (18.5 against 3.5 us), and a frame's
headers and checksums add nothing the row does not already say.
"""

from __future__ import annotations

from typing import Final

import lz4.block

from bot.storage.base import MAX_BODY_BYTES

LZ4: Final = "lz4"
# lz4's block format begins with the original size (4 bytes, little-endian). No body over
# MAX_BODY_BYTES is ever stored, so a larger size can only be a damaged row, and decompressing
# it would first allocate that much (up to 2 GB).
_SIZE_PREFIX_BYTES: Final = 4


class UnreadableBody(ValueError):
    """A stored body this version cannot turn back into the bytes received."""


class DamagedBody(UnreadableBody):
    """A body stored as lz4 whose block does not decompress (a damaged row)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"delivery body stored as lz4 cannot be decompressed: {reason}")


class UnknownBodyCompression(UnreadableBody):
    """A body stored in an encoding this version does not know: the database was written by
    a newer judge-bot."""

    def __init__(self, compression: object) -> None:
        super().__init__(
            f"delivery body stored with compression {compression!r}, which this version of"
            " judge-bot cannot read (was the database written by a newer version?)"
        )
        self.compression = compression


def encode_body(body: bytes) -> tuple[bytes, str | None]:
    """What to store for `body`, and the name of its encoding (None: as received).

    A body lz4 does not shrink (random bytes, a body of a few bytes) is stored as it came:
    reading it back then costs nothing."""
    compressed: bytes = lz4.block.compress(body)
    if len(compressed) < len(body):
        return compressed, LZ4
    return body, None


def decode_body(stored: bytes, compression: str | None) -> bytes:
    """The body as received, from what `encode_body` stored and the name it gave."""
    if compression is None:
        return bytes(stored)
    if compression == LZ4:
        return _decompress(bytes(stored))
    raise UnknownBodyCompression(compression)


def _decompress(stored: bytes) -> bytes:
    if len(stored) < _SIZE_PREFIX_BYTES:
        raise DamagedBody(f"{len(stored)} bytes, shorter than its size prefix")
    size = int.from_bytes(stored[:_SIZE_PREFIX_BYTES], "little")
    if size > MAX_BODY_BYTES:
        raise DamagedBody(f"its size prefix says {size:,} bytes, more than any webhook body")
    try:
        body: bytes = lz4.block.decompress(stored)
    except (lz4.block.LZ4BlockError, ValueError) as exc:
        raise DamagedBody(str(exc)) from None
    return body
