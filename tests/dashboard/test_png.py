"""The screenshot reader, checked against PNGs written here with every filter type."""

from __future__ import annotations

import struct
import zlib

import pytest

from tests.dashboard.png import SIGNATURE, coloured_pixels, read_png


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body)
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def _paeth(left: int, up: int, corner: int) -> int:
    guess = left + up - corner
    options = (abs(guess - left), abs(guess - up), abs(guess - corner))
    return (left, up, corner)[options.index(min(options))]


def encode(rows: list[bytes], width: int, channels: int, filters: list[int]) -> bytes:
    """Each row filtered as told: the reader must undo every kind."""
    raw = bytearray()
    previous = bytes(width * channels)
    for row, kind in zip(rows, filters, strict=True):
        out = bytearray([kind])
        for i, value in enumerate(row):
            left = row[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            guess = (0, left, up, (left + up) // 2, _paeth(left, up, corner))[kind]
            out.append((value - guess) & 0xFF)
        raw += out
        previous = row
    colour = 6 if channels == 4 else 2
    header = struct.pack(">IIBBBBB", width, len(rows), 8, colour, 0, 0, 0)
    return (
        SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(bytes(raw)))
        + _chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("channels", [3, 4])
def test_every_filter_is_undone(channels: int) -> None:
    white = bytes([255] * channels)
    red = bytes([213, 94, 0, 255][:channels])
    rows = [white * 2 + red * 2, red * 4, white * 4, red + white * 3, red * 2 + white * 2]
    image = read_png(encode(rows, 4, channels, [0, 1, 2, 3, 4]))
    assert (image.width, image.height) == (4, 5)
    assert image.rows == rows
    assert image.pixel(2, 0) == (213, 94, 0)
    assert coloured_pixels(image) == 9


def test_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="not a PNG"):
        read_png(b"GIF89a")
    grey = SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="unsupported"):
        read_png(grey + _chunk(b"IEND", b""))
    bad_filter = encode([b"\x00\x00\x00"], 1, 3, [0]).replace(
        zlib.compress(b"\x00\x00\x00\x00"), zlib.compress(b"\x07\x00\x00\x00")
    )
    with pytest.raises(ValueError, match="unknown PNG filter 7"):
        read_png(bad_filter)
