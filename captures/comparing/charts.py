"""Small PNG charts with the standard library only (zlib + struct): bars and histograms.

The compare report needs two kinds of plot (request mix, RTT distribution); matplotlib would be
a large dependency for that, so this draws them on an RGB canvas with a built-in 5x7 bitmap font
(upper-case letters, digits, a little punctuation) and encodes an 8-bit truecolour PNG.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Mapping, Sequence

__all__ = ["Canvas", "bar_chart", "encode_png", "histogram", "linear_ticks", "log_ticks"]

Color = tuple[int, int, int]
WHITE: Color = (255, 255, 255)
BLACK: Color = (0, 0, 0)
GREY: Color = (200, 200, 200)
# colour-blind-safe pair (Okabe-Ito) for baseline / candidate, then more for extra series
PALETTE: tuple[Color, ...] = (
    (0, 114, 178),
    (230, 159, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (213, 94, 0),
)

# 5x7 glyphs, one int per row, bit 4 is the leftmost column
_FONT: dict[str, tuple[int, ...]] = {
    " ": (0, 0, 0, 0, 0, 0, 0),
    "0": (14, 17, 19, 21, 25, 17, 14),
    "1": (4, 12, 4, 4, 4, 4, 14),
    "2": (14, 17, 1, 2, 4, 8, 31),
    "3": (31, 2, 4, 2, 1, 17, 14),
    "4": (2, 6, 10, 18, 31, 2, 2),
    "5": (31, 16, 30, 1, 1, 17, 14),
    "6": (6, 8, 16, 30, 17, 17, 14),
    "7": (31, 1, 2, 4, 8, 8, 8),
    "8": (14, 17, 17, 14, 17, 17, 14),
    "9": (14, 17, 17, 15, 1, 2, 12),
    "A": (14, 17, 17, 31, 17, 17, 17),
    "B": (30, 17, 17, 30, 17, 17, 30),
    "C": (14, 17, 16, 16, 16, 17, 14),
    "D": (28, 18, 17, 17, 17, 18, 28),
    "E": (31, 16, 16, 30, 16, 16, 31),
    "F": (31, 16, 16, 30, 16, 16, 16),
    "G": (14, 17, 16, 23, 17, 17, 15),
    "H": (17, 17, 17, 31, 17, 17, 17),
    "I": (14, 4, 4, 4, 4, 4, 14),
    "J": (7, 2, 2, 2, 2, 18, 12),
    "K": (17, 18, 20, 24, 20, 18, 17),
    "L": (16, 16, 16, 16, 16, 16, 31),
    "M": (17, 27, 21, 21, 17, 17, 17),
    "N": (17, 17, 25, 21, 19, 17, 17),
    "O": (14, 17, 17, 17, 17, 17, 14),
    "P": (30, 17, 17, 30, 16, 16, 16),
    "Q": (14, 17, 17, 17, 21, 18, 13),
    "R": (30, 17, 17, 30, 20, 18, 17),
    "S": (15, 16, 16, 14, 1, 1, 30),
    "T": (31, 4, 4, 4, 4, 4, 4),
    "U": (17, 17, 17, 17, 17, 17, 14),
    "V": (17, 17, 17, 17, 17, 10, 4),
    "W": (17, 17, 17, 21, 21, 21, 10),
    "X": (17, 17, 10, 4, 10, 17, 17),
    "Y": (17, 17, 17, 10, 4, 4, 4),
    "Z": (31, 1, 2, 4, 8, 16, 31),
    ".": (0, 0, 0, 0, 0, 12, 12),
    ",": (0, 0, 0, 0, 12, 4, 8),
    "-": (0, 0, 0, 31, 0, 0, 0),
    "_": (0, 0, 0, 0, 0, 0, 31),
    ":": (0, 12, 12, 0, 12, 12, 0),
    "/": (1, 1, 2, 4, 8, 16, 16),
    "(": (2, 4, 8, 8, 8, 4, 2),
    ")": (8, 4, 2, 2, 2, 4, 8),
    "%": (24, 25, 2, 4, 8, 19, 3),
    "=": (0, 0, 31, 0, 31, 0, 0),
    "+": (0, 4, 4, 31, 4, 4, 0),
    "<": (2, 4, 8, 16, 8, 4, 2),
    ">": (8, 4, 2, 1, 2, 4, 8),
    "?": (14, 17, 1, 2, 4, 0, 4),
    "#": (10, 10, 31, 10, 31, 10, 10),
}
GLYPH_W, GLYPH_H = 6, 8  # advance per character, with one column and one row of spacing


def encode_png(width: int, height: int, rgb: bytes | bytearray) -> bytes:
    """An 8-bit RGB PNG of `rgb` (rows top to bottom, 3 bytes per pixel)."""
    if len(rgb) != width * height * 3:
        raise ValueError(f"expected {width * height * 3} bytes of pixels, got {len(rgb)}")
    stride = width * 3
    # filter type 0 (none) before every row
    raw = b"".join(b"\0" + bytes(rgb[y * stride : (y + 1) * stride]) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


class Canvas:
    """An RGB raster with rectangles, lines and bitmap text; `png()` encodes it."""

    def __init__(self, width: int, height: int, background: Color = WHITE) -> None:
        self.width = width
        self.height = height
        self.px = bytearray(bytes(background) * (width * height))

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: Color) -> None:
        """Fill the rectangle [x0, x1) x [y0, y1), clipped to the canvas."""
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.height, max(y0, y1))
        if x0 >= x1:
            return
        row = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            start = (y * self.width + x0) * 3
            self.px[start : start + len(row)] = row

    def hline(self, x0: int, x1: int, y: int, color: Color = BLACK) -> None:
        """A one-pixel horizontal line."""
        self.rect(x0, y, x1 + 1, y + 1, color)

    def vline(self, x: int, y0: int, y1: int, color: Color = BLACK) -> None:
        """A one-pixel vertical line."""
        self.rect(x, y0, x + 1, y1 + 1, color)

    def text(self, x: int, y: int, s: str, color: Color = BLACK, scale: int = 1) -> int:
        """Draw `s` upper-cased (unknown characters as '?'); returns the x after the text."""
        for ch in s.upper():
            glyph = _FONT.get(ch, _FONT["?"])
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (16 >> col):
                        self.rect(
                            x + col * scale,
                            y + row * scale,
                            x + (col + 1) * scale,
                            y + (row + 1) * scale,
                            color,
                        )
            x += GLYPH_W * scale
        return x

    def png(self) -> bytes:
        """The canvas as PNG bytes."""
        return encode_png(self.width, self.height, self.px)


def text_width(s: str, scale: int = 1) -> int:
    """Pixels `Canvas.text` advances for `s`."""
    return len(s) * GLYPH_W * scale


def _nice_ticks(top: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least `top`."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def _fmt(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e4:
        return f"{v / 1e3:g}K"
    return f"{v:g}"


def _legend(c: Canvas, x: int, y: int, names: Sequence[str]) -> None:
    for i, name in enumerate(names):
        c.rect(x, y, x + 8, y + 7, PALETTE[i % len(PALETTE)])
        x = c.text(x + 11, y, name) + 14


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    unit: str = "REQUESTS",
    width: int = 720,
    bar_height: int = 9,
) -> bytes:
    """Horizontal grouped bars: one group per category, one bar per series; PNG bytes."""
    names = list(series)
    label_w = max([text_width(c) for c in categories] + [40]) + 10
    group_h = bar_height * max(1, len(names)) + 6
    top, bottom = 34, 38
    height = top + bottom + group_h * max(1, len(categories))
    c = Canvas(width, height)
    c.text(8, 6, title, scale=2 if text_width(title, 2) < width - 16 else 1)
    _legend(c, 8, 24, names)
    x0, x1 = label_w, width - 50
    peak = max([v for vals in series.values() for v in vals] + [0])
    ticks = _nice_ticks(peak)
    scale = (x1 - x0) / ticks[-1]
    plot_bottom = top + group_h * len(categories)
    for t in ticks:
        x = x0 + round(t * scale)
        c.vline(x, top, plot_bottom, GREY)
        c.text(x - text_width(_fmt(t)) // 2, plot_bottom + 6, _fmt(t))
    for gi, cat in enumerate(categories):
        gy = top + gi * group_h + 3
        c.text(x0 - 6 - text_width(cat), gy + (group_h - 6 - GLYPH_H) // 2, cat)
        for si, name in enumerate(names):
            v = series[name][gi]
            y = gy + si * bar_height
            c.rect(
                x0,
                y,
                x0 + max(1 if v else 0, round(v * scale)),
                y + bar_height - 1,
                PALETTE[si % len(PALETTE)],
            )
            c.text(x0 + round(v * scale) + 3, y + 1, _fmt(v))
    c.vline(x0, top, plot_bottom)
    c.text((x0 + x1 - text_width(unit)) // 2, plot_bottom + 20, unit)
    return c.png()


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values on a log axis from 10**lo to 10**hi: decades, with 2 and 5 when few."""
    first, last = math.floor(lo), math.ceil(hi)
    steps = (1, 2, 5) if last - first <= 3 else (1,)
    ticks = [m * 10.0**e for e in range(first, last + 1) for m in steps]
    return [t for t in ticks if 10**lo * 0.999 <= t <= 10**hi * 1.001]


def linear_ticks(lo: float, hi: float) -> list[float]:
    """Round tick values covering [lo, hi]."""
    step = _nice_ticks(hi - lo)[1]
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int(math.ceil((hi - start) / step)) + 1)]


def histogram(
    title: str,
    series: Mapping[str, Sequence[float]],
    *,
    bins: int = 30,
    log: bool = True,
    unit: str = "MS",
    y_label: str = "REQUESTS",
    width: int = 720,
    height: int = 280,
) -> bytes:
    """Overlaid step histograms of each series' values (log-spaced bins by default); PNG bytes.

    Both axes are labelled and gridded: round counts up the side, and along the bottom decades
    (with 2 and 5 between when the range is short) on a log scale, round values on a linear one.
    """
    names = list(series)
    values = [v for vals in series.values() for v in vals if v is not None]
    c = Canvas(width, height)
    c.text(8, 6, title, scale=2 if text_width(title, 2) < width - 16 else 1)
    _legend(c, 8, 24, names)
    y0, y1 = 54, height - 36
    if not values:
        c.vline(50, y0, y1)
        c.hline(50, width - 20, y1)
        c.text(60, (y0 + y1) // 2, "NO DATA")
        return c.png()
    pos = [v for v in values if v > 0]
    use_log = bool(log and pos and max(pos) / min(pos) > 20)
    if use_log:
        lo, hi = math.log10(min(pos)), math.log10(max(pos))
    else:
        lo, hi = min(values), max(values)
    if hi <= lo:
        hi = lo + 1

    def fx(v: float) -> float:
        t = math.log10(max(v, 10**lo)) if use_log else v
        return (t - lo) / (hi - lo)

    counts = {}
    for name in names:
        h = [0] * bins
        for v in series[name]:
            if v is not None:
                h[min(bins - 1, int(fx(v) * bins))] += 1
        counts[name] = h
    y_ticks = _nice_ticks(max(max(h) for h in counts.values()) or 1, 4)
    peak = y_ticks[-1]
    x0 = max(text_width(_fmt(t)) for t in y_ticks) + 14
    x1 = width - 24
    for t in y_ticks:
        y = y1 - round(t / peak * (y1 - y0))
        c.hline(x0, x1, y, GREY)
        c.text(x0 - 5 - text_width(_fmt(t)), y - GLYPH_H // 2, _fmt(t))
    c.text(4, y0 - 12, y_label)
    x_ticks = log_ticks(lo, hi) if use_log else linear_ticks(lo, hi)
    for v in x_ticks:
        x = x0 + round((x1 - x0) * fx(v)) if lo <= (math.log10(v) if use_log else v) else x0
        if not x0 <= x <= x1:
            continue
        c.vline(x, y0, y1, GREY)
        c.vline(x, y1, y1 + 3)
        label = _fmt(v)
        c.text(max(0, min(width - text_width(label), x - text_width(label) // 2)), y1 + 6, label)
    bw = (x1 - x0) / bins
    for si, name in enumerate(names):
        color = PALETTE[si % len(PALETTE)]
        prev_y = y1
        for b, n in enumerate(counts[name]):
            xa, xb = x0 + round(b * bw), x0 + round((b + 1) * bw)
            y = y1 - round(n / peak * (y1 - y0))
            # step outline, so overlapping series stay readable
            c.rect(xa, y, xb + 1, y + 2, color)
            c.rect(xa, min(prev_y, y), xa + 2, max(prev_y, y) + 2, color)
            prev_y = y
        c.rect(x1, min(prev_y, y1), x1 + 2, y1, color)
    c.vline(x0, y0, y1)
    c.hline(x0, x1, y1)
    axis = f"{unit}, LOG SCALE" if use_log else unit
    c.text((x0 + x1 - text_width(axis)) // 2, y1 + 20, axis)
    return c.png()
