"""A small PNG reader for screenshots: 8-bit RGB or RGBA, not interlaced (what Chromium
writes). Enough to count painted pixels without an imaging library."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    channels: int
    rows: list[bytes]
    """Unfiltered scanlines, `width * channels` bytes each."""

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        start = x * self.channels
        r, g, b = self.rows[y][start : start + 3]
        return r, g, b


def read_png(data: bytes) -> Image:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    offset, header, compressed = len(SIGNATURE), b"", bytearray()
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            compressed += body
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in _CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}")
    channels = _CHANNELS[colour]
    return Image(
        width, height, channels, _unfilter(zlib.decompress(compressed), width, height, channels)
    )


def _unfilter(raw: bytes, width: int, height: int, channels: int) -> list[bytes]:
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            line[i] = (line[i] + _predict(kind, left, up, corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return rows


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    if kind == 4:
        guess = left + up - corner
        options = (abs(guess - left), abs(guess - up), abs(guess - corner))
        return (left, up, corner)[options.index(min(options))]
    raise ValueError(f"unknown PNG filter {kind}")


def coloured_pixels(image: Image, spread: int = 60) -> int:
    """Pixels with a clear hue (channels apart by `spread`): the bars' fills, never the
    white background, the grey grid or the black axes and text."""
    count = 0
    for row in image.rows:
        for start in range(0, len(row), image.channels):
            r, g, b = row[start], row[start + 1], row[start + 2]
            count += max(r, g, b) - min(r, g, b) >= spread
    return count
