"""The sale's main dashboard panels drawn as one SVG from what Prometheus's
HTTP API returned (Grafana is not in Debian's packages): the picture in the
README. Used by monitoring_check.py; no dependency beyond Python."""

import html
import re

COLOURS = ["#3274d9", "#e0752d", "#56a64b", "#a352cc", "#e02f44", "#8ab8ff", "#f2cc0c"]
PANEL_W, PANEL_H, GAP, TOP = 580, 250, 20, 60
PLOT = {"left": 62, "right": 16, "top": 34, "bottom": 52}


def legend(template, labels):
    """Grafana's legendFormat: {{name}} replaced by the series' label."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template) or "value"


def number(value, unit):
    if unit == "s":
        return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}" if value >= 10 or value == 0 else f"{value:.1f}"


def panel_svg(x, y, title, unit, lines, started, ended):
    """One panel: lines is [(legend, [(t, v), ...])]."""
    out = [f'<g transform="translate({x},{y})">',
           f'<rect width="{PANEL_W}" height="{PANEL_H}" rx="4" fill="#ffffff" stroke="#d8d9da"/>',
           f'<text x="12" y="22" font-size="14" font-weight="600" fill="#1f2329">{html.escape(title)}</text>']
    left, top = PLOT["left"], PLOT["top"]
    width = PANEL_W - left - PLOT["right"]
    height = PANEL_H - top - PLOT["bottom"]
    peak = max([v for _, points in lines for _, v in points] + [0])
    peak = peak * 1.1 if peak > 0 else 1
    span = max(ended - started, 1)
    for i in range(5):
        value = peak * i / 4
        gy = top + height - height * i / 4
        out.append(f'<line x1="{left}" x2="{left + width}" y1="{gy:.1f}" y2="{gy:.1f}" stroke="#eeeeee"/>')
        out.append(f'<text x="{left - 6}" y="{gy + 4:.1f}" font-size="10" text-anchor="end" fill="#6e7079">'
                   f'{number(value, unit)}</text>')
    for i in range(7):
        t = span * i / 6
        gx = left + width * i / 6
        out.append(f'<text x="{gx:.1f}" y="{top + height + 14}" font-size="10" text-anchor="middle" '
                   f'fill="#6e7079">{t:.0f} s</text>')
    for n, (name, points) in enumerate(lines):
        colour = COLOURS[n % len(COLOURS)]
        path = " ".join(f"{left + width * (t - started) / span:.1f},{top + height - height * v / peak:.1f}"
                        for t, v in points)
        if path:
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.8"/>')
        lx = left + (n % 4) * 128
        ly = PANEL_H - 14 - 14 * (n // 4)
        out.append(f'<rect x="{lx}" y="{ly - 8}" width="12" height="3" fill="{colour}"/>')
        out.append(f'<text x="{lx + 16}" y="{ly - 3}" font-size="11" fill="#1f2329">{html.escape(name[:18])}</text>')
    out.append("</g>")
    return "\n".join(out)


def draw(panels, started, ended, subtitle):
    """panels: [(title, unit, [(legend, [(t, v)])])], two to a row."""
    rows = (len(panels) + 1) // 2
    width = 2 * PANEL_W + 3 * GAP
    height = TOP + rows * (PANEL_H + GAP)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif">',
           f'<rect width="{width}" height="{height}" fill="#f4f5f5"/>',
           f'<text x="{GAP}" y="30" font-size="18" font-weight="700" fill="#1f2329">Ticket: a sale</text>',
           f'<text x="{GAP}" y="48" font-size="12" fill="#6e7079">{html.escape(subtitle)}</text>']
    for i, (title, unit, lines) in enumerate(panels):
        x = GAP + (i % 2) * (PANEL_W + GAP)
        y = TOP + (i // 2) * (PANEL_H + GAP)
        out.append(panel_svg(x, y, title, unit, lines, started, ended))
    out.append("</svg>")
    return "\n".join(out) + "\n"
