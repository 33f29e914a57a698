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

LZ4: Final = "lz4"


class UnknownBodyCompression(ValueError):
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
        body: bytes = lz4.block.decompress(stored)
        return body
    raise UnknownBodyCompression(compression)
