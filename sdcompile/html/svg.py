"""Inline SVG bar charts for the HTML reports (no JavaScript, no external assets).

Each chart has a viewBox and scales to its container's width (the template caps it at its natural size), so a
narrow window shrinks it instead of cutting it. Text never overlaps: labels are cut to what their column holds, and
the bars leave room beside them for their values. A chart's scale has a floor (`floor`): a delta of a few
microseconds in a profile of milliseconds stays a short bar instead of filling the width.
"""

from __future__ import annotations

from html import escape

EAGER, COMPILE, GROW, SHRINK = "#7f8fa9", "#d9822b", "#c0392b", "#27ae60"
ROW, LABEL_W, BAR_W = 22, 330, 420
FONT = 11
CHAR_W = 6.4  # an upper bound of one character's advance at FONT px in the template's sans font
LABEL_CHARS = int((LABEL_W - 12) / CHAR_W)


def _label(text: str, limit: int = LABEL_CHARS) -> str:
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def _row_label(text: str, y: float) -> str:
    return f'<text x="{LABEL_W - 6}" y="{y}" font-size="{FONT}" text-anchor="end">{_label(text)}</text>'


def _text_width(text: str) -> float:
    return len(text) * CHAR_W + 4


def _open(width: float, height: float, label: str) -> str:
    return (f'<svg viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
            f'class="chart" preserveAspectRatio="xMinYMin meet" role="img" aria-label="{escape(label)}">')


def diverging_bars(rows: list[tuple[str, float]], unit: str = "us", floor: float = 0.0, digits: int = 1) -> str:
    """One bar per row from a zero line: right (red) for growth, left (green) for reduction. The full half-width
    stands for max(largest |value|, `floor`)."""
    if not rows:
        return ""
    values = [f"{v:+,.{digits}f}" for _, v in rows]
    room = max(_text_width(v) for v in values)  # each side keeps room for the value written beyond its bar
    half = BAR_W / 2
    peak = max(max(abs(v) for _, v in rows), floor) or 1.0
    span = half - room  # a bar's longest, leaving its value room on either side
    zero = LABEL_W + room + span  # left bars and their values end at the labels' column, never in it
    width_total = LABEL_W + BAR_W + 8
    height = ROW * len(rows) + 30
    parts = [_open(width_total, height, f"{unit} delta per row"),
             f'<line x1="{zero:.1f}" y1="4" x2="{zero:.1f}" y2="{height - 22}" stroke="#8893a6" stroke-width="1"/>']
    for i, ((label, value), shown) in enumerate(zip(rows, values, strict=True)):
        y = 6 + i * ROW
        width = abs(value) / peak * span
        x = zero if value >= 0 else zero - width
        color = GROW if value > 0 else SHRINK
        parts.append(_row_label(label, y + 14))
        parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{max(width, 1):.1f}" height="{ROW - 8}" fill="{color}">'
                     f'<title>{escape(label)}: {shown} {escape(unit)}</title></rect>')
        tx = zero + width + 4 if value >= 0 else zero - width - 4
        anchor = "start" if value >= 0 else "end"
        parts.append(f'<text x="{tx:.1f}" y="{y + 14}" font-size="{FONT}" text-anchor="{anchor}">{shown}</text>')
    scale = f"; full bar = {peak:,.{digits}f}" + (" (the scale's floor)" if peak == floor else "")
    parts.append(f'<text x="4" y="{height - 6}" font-size="{FONT}">'
                 f'compile − eager ({escape(unit)}{scale}): red grew, green shrank</text>')
    parts.append("</svg>")
    return "".join(parts)


def paired_bars(rows: list[tuple[str, float, float]], unit: str = "us",
                names: tuple[str, str] = ("eager", "compile"), digits: int = 1) -> str:
    """Two bars per row (eager grey, compile orange) on one scale."""
    if not rows:
        return ""
    shown = [(f"{a:,.{digits}f}", f"{b:,.{digits}f}") for _, a, b in rows]
    room = max(_text_width(t) for pair in shown for t in pair)
    peak = max(max(a, b) for _, a, b in rows) or 1.0
    row_h = ROW + 8
    height = row_h * len(rows) + 34
    width_total = LABEL_W + BAR_W + 8
    span = BAR_W - room
    parts = [_open(width_total, height, f"{names[0]} and {names[1]} per row ({unit})")]
    for i, ((label, a, b), texts) in enumerate(zip(rows, shown, strict=True)):
        y = 6 + i * row_h
        parts.append(_row_label(label, y + 16))
        for j, (value, text, color, side) in enumerate(((a, texts[0], EAGER, names[0]),
                                                        (b, texts[1], COMPILE, names[1]))):
            width = value / peak * span
            by = y + j * (row_h - 8) / 2 + 2
            bar_h = (row_h - 12) / 2
            parts.append(f'<rect x="{LABEL_W}" y="{by:.1f}" width="{max(width, 0.5):.1f}" height="{bar_h:.1f}" '
                         f'fill="{color}"><title>{escape(label)} {side}: {text} {escape(unit)}</title></rect>')
            parts.append(f'<text x="{LABEL_W + width + 4:.1f}" y="{by + 9:.1f}" font-size="10">{text}</text>')
    ly = height - 10
    parts.append(f'<rect x="{LABEL_W}" y="{ly - 9}" width="10" height="10" fill="{EAGER}"/>'
                 f'<text x="{LABEL_W + 14}" y="{ly}" font-size="{FONT}">{escape(names[0])}</text>'
                 f'<rect x="{LABEL_W + 80}" y="{ly - 9}" width="10" height="10" fill="{COMPILE}"/>'
                 f'<text x="{LABEL_W + 94}" y="{ly}" font-size="{FONT}">{escape(names[1])} ({escape(unit)})</text>')
    parts.append("</svg>")
    return "".join(parts)
