"""Inline SVG bar charts for the HTML reports (no JavaScript, no external assets)."""

from __future__ import annotations

from html import escape

EAGER, COMPILE, GROW, SHRINK = "#7f8fa9", "#d9822b", "#c0392b", "#27ae60"
ROW, LABEL_W, BAR_W = 22, 330, 420


def _label(text: str, limit: int = 52) -> str:
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def diverging_bars(rows: list[tuple[str, float]], unit: str = "us") -> str:
    """One bar per row from a zero line: right (red) for growth, left (green) for reduction."""
    if not rows:
        return ""
    peak = max(abs(v) for _, v in rows) or 1.0
    half = BAR_W / 2
    zero = LABEL_W + half
    height = ROW * len(rows) + 30
    parts = [f'<svg width="{LABEL_W + BAR_W + 120}" height="{height}" '
             f'role="img" aria-label="time delta per kernel">',
             f'<line x1="{zero}" y1="4" x2="{zero}" y2="{height - 22}" stroke="#8893a6" stroke-width="1"/>']
    for i, (label, value) in enumerate(rows):
        y = 6 + i * ROW
        width = abs(value) / peak * (half - 4)
        x = zero if value >= 0 else zero - width
        color = GROW if value > 0 else SHRINK
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + 14}" font-size="11" text-anchor="end">{_label(label)}</text>')
        parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{max(width, 1):.1f}" height="{ROW - 8}" fill="{color}">'
                     f'<title>{escape(label)}: {value:+,.1f} {unit}</title></rect>')
        tx = zero + width + 4 if value >= 0 else zero - width - 4
        anchor = "start" if value >= 0 else "end"
        parts.append(f'<text x="{tx:.1f}" y="{y + 14}" font-size="11" text-anchor="{anchor}">{value:+,.1f}</text>')
    parts.append(f'<text x="{zero}" y="{height - 6}" font-size="11" text-anchor="middle">'
                 f'compile − eager ({escape(unit)}): red grew, green shrank</text>')
    parts.append("</svg>")
    return "".join(parts)


def paired_bars(rows: list[tuple[str, float, float]], unit: str = "us",
                names: tuple[str, str] = ("eager", "compile")) -> str:
    """Two bars per row (eager grey, compile orange) on one scale."""
    if not rows:
        return ""
    peak = max(max(a, b) for _, a, b in rows) or 1.0
    row_h = ROW + 8
    height = row_h * len(rows) + 34
    parts = [f'<svg width="{LABEL_W + BAR_W + 120}" height="{height}" '
             f'role="img" aria-label="eager and compile per row">']
    for i, (label, a, b) in enumerate(rows):
        y = 6 + i * row_h
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + 16}" font-size="11" text-anchor="end">{_label(label)}</text>')
        for j, (value, color, side) in enumerate(((a, EAGER, names[0]), (b, COMPILE, names[1]))):
            width = value / peak * (BAR_W - 10)
            by = y + j * (row_h - 8) / 2 + 2
            bar_h = (row_h - 12) / 2
            parts.append(f'<rect x="{LABEL_W}" y="{by:.1f}" width="{max(width, 0.5):.1f}" height="{bar_h:.1f}" '
                         f'fill="{color}"><title>{escape(label)} {side}: {value:,.1f} {escape(unit)}</title></rect>')
            parts.append(f'<text x="{LABEL_W + width + 4:.1f}" y="{by + 9:.1f}" font-size="10">{value:,.1f}</text>')
    ly = height - 10
    parts.append(f'<rect x="{LABEL_W}" y="{ly - 9}" width="10" height="10" fill="{EAGER}"/>'
                 f'<text x="{LABEL_W + 14}" y="{ly}" font-size="11">{escape(names[0])}</text>'
                 f'<rect x="{LABEL_W + 80}" y="{ly - 9}" width="10" height="10" fill="{COMPILE}"/>'
                 f'<text x="{LABEL_W + 94}" y="{ly}" font-size="11">{escape(names[1])} ({escape(unit)})</text>')
    parts.append("</svg>")
    return "".join(parts)
