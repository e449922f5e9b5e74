"""A timeline of one profiled call: one lane per thread, one bar per task (hand-written SVG).

Input: the ``tasks`` of :func:`irviz.measure.profile` as dicts (``Task.to_dict()``) with
``lane`` (0 = the calling thread), ``start_us``, ``dur_us``, ``label`` and
optionally ``name`` and ``site``. Tasks that overlap on one lane (a task that
waited is still "running" while the thread runs another) are stacked in extra
rows of that lane. Each bar says its label and duration when they fit, else as
much as fits (the full text is in the bar's tooltip). All text is escaped.
"""
from __future__ import annotations

import math

from .escape import xml_text
from .style import TIMELINE, TIMELINE_MAIN, TIMELINE_TASKS

__all__ = ["timeline_svg"]

FONT = "Helvetica, Arial, sans-serif"
WIDTH = 1000
GUTTER = 120          # lane names
RIGHT = 24
ROW_H = 24
BAR_H = 18
CHAR_W = 6.3          # average width of an 11 px character
TOP = 78              # title, summary line, axis

_C = TIMELINE  # colours: the style table

_e = xml_text  # every text and attribute value of the SVG


def _ms(us: float) -> str:
    if us >= 1000:
        return f"{us / 1000:.3g} ms" if us < 100_000 else f"{us / 1000:.0f} ms"
    return f"{us:.0f} µs"


def _nice_step(span_ms: float, target: int = 8) -> float:
    raw = max(span_ms / target, 1e-6)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _tick_label(v: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    if step in (2.5 * 10 ** k for k in range(-6, 0)):
        decimals += 1
    return f"{v:.{decimals}f}"


def _rows(tasks: list[dict]) -> dict[int, list[list[dict]]]:
    """lane -> rows of non-overlapping tasks (greedy, by start time)."""
    lanes: dict[int, list[list[dict]]] = {}
    for t in sorted(tasks, key=lambda t: (float(t["start_us"]), -float(t["dur_us"]))):
        rows = lanes.setdefault(int(t["lane"]), [])
        start = float(t["start_us"])
        for row in rows:
            last = row[-1]
            if float(last["start_us"]) + float(last["dur_us"]) <= start + 1e-9:
                row.append(t)
                break
        else:
            rows.append([t])
    return lanes


def _fit(label: str, dur: str, room: float) -> str | None:
    """The longest of "label · dur", "lab… · dur", "dur" that fits ``room`` pixels."""
    full = f"{label} · {dur}"
    if len(full) * CHAR_W <= room:
        return full
    keep = int((room / CHAR_W) - len(dur) - 4)
    if keep >= 4:
        return f"{label[:keep]}… · {dur}"
    if len(dur) * CHAR_W <= room:
        return dur
    return None


def timeline_svg(tasks: list[dict], title: str) -> str:
    """A self-contained SVG timeline of ``tasks`` (see the module docstring)."""
    if not tasks:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="80" '
                f'viewBox="0 0 {WIDTH} 80" font-family="{FONT}">'
                f'<rect class="background" width="{WIDTH}" height="80" fill="{_C["background"]}"/>'
                f'<text x="16" y="28" font-size="16" font-weight="bold">{_e(title)}</text>'
                f'<text x="16" y="54" font-size="12" fill="{_C["text"]}">no tasks were recorded'
                f'</text></svg>\n')
    t0 = min(float(t["start_us"]) for t in tasks)
    t1 = max(float(t["start_us"]) + float(t["dur_us"]) for t in tasks)
    span = max(t1 - t0, 1e-3)
    plot_w = WIDTH - GUTTER - RIGHT
    scale = plot_w / span

    def x(us: float) -> float:
        return GUTTER + (us - t0) * scale

    lanes = _rows(tasks)
    order = sorted(lanes)
    height = TOP + sum(len(lanes[lane]) * ROW_H + 8 for lane in order) + 34
    palette: dict[str, tuple[str, str, str]] = {}
    n_forked = sum(1 for t in tasks if int(t["lane"]) != 0)
    main = [t for t in tasks if int(t["lane"]) == 0]
    wall = max((float(t["dur_us"]) for t in main), default=span)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="{FONT}">',
           f'<title>{_e(title)}</title>',
           f'<rect class="background" width="{WIDTH}" height="{height}" fill="{_C["background"]}"/>',
           f'<text x="16" y="26" font-size="16" font-weight="bold" fill="{_C["title"]}">{_e(title)}</text>']
    pool = len(order) - (1 if 0 in lanes else 0)
    summary = (f"{n_forked} forked task{'s' if n_forked != 1 else ''} on {pool} pool "
               f"thread{'s' if pool != 1 else ''} · call {_ms(wall)}")
    out.append(f'<text x="16" y="45" font-size="12" fill="{_C["text"]}">{_e(summary)}</text>')

    # time axis
    axis_y = TOP - 8
    step = _nice_step(span / 1000)
    out.append(f'<line x1="{GUTTER}" y1="{axis_y}" x2="{GUTTER + plot_w}" y2="{axis_y}" '
               f'stroke="{_C["axis"]}" stroke-width="1"/>')
    n_ticks = int(math.floor((span / 1000) / step + 1e-9))
    grid_bottom = height - 34
    for k in range(n_ticks + 1):
        v = k * step
        tx = x(t0 + v * 1000)
        out.append(f'<line x1="{tx:.1f}" y1="{axis_y - 4}" x2="{tx:.1f}" y2="{grid_bottom}" '
                   f'stroke="{_C["grid"]}" stroke-width="1"/>')
        out.append(f'<text x="{tx:.1f}" y="{axis_y - 8}" font-size="10" fill="{_C["text"]}" '
                   f'text-anchor="middle">{_e(_tick_label(v, step) if k else "0")}</text>')
    out.append(f'<text x="{GUTTER - 14}" y="{axis_y - 8}" font-size="10" fill="{_C["text"]}" '
               f'text-anchor="end">time (ms)</text>')

    y = TOP
    for i, lane in enumerate(order):
        rows = lanes[lane]
        lane_h = len(rows) * ROW_H + 8
        if i % 2 == 0:
            out.append(f'<rect class="lane" x="0" y="{y}" width="{WIDTH}" height="{lane_h}" '
                       f'fill="{_C["lane"]}" fill-opacity="0.8"/>')
        name = "main thread" if lane == 0 else f"pool thread {lane}"
        out.append(f'<text x="{GUTTER - 10}" y="{y + 4 + ROW_H / 2 + 4:.1f}" font-size="12" '
                   f'fill="{_C["lane_name"]}" text-anchor="end">{_e(name)}</text>')
        for r, row in enumerate(rows):
            by = y + 4 + r * ROW_H + (ROW_H - BAR_H) / 2
            for j, t in enumerate(row):
                label = str(t.get("label") or t.get("name") or "task")
                if lane == 0:
                    fill, stroke, ink = TIMELINE_MAIN
                else:
                    if label not in palette:
                        palette[label] = TIMELINE_TASKS[len(palette) % len(TIMELINE_TASKS)]
                    fill, stroke, ink = palette[label]
                start, dur = float(t["start_us"]), float(t["dur_us"])
                bx, bw = x(start), max(dur * scale, 1.5)
                tip = f"{label}\n{_ms(dur)}, from {_ms(start - t0)}"
                if t.get("site"):
                    tip += f"\nforked at {t['site']}"
                if t.get("name") and t.get("name") != label:
                    tip += f"\nprofiler event: {t['name']}"
                out.append(f'<g><title>{_e(tip)}</title>')
                out.append(f'<rect class="task" x="{bx:.1f}" y="{by:.1f}" width="{bw:.1f}" '
                           f'height="{BAR_H}" rx="3" fill="{fill}" stroke="{stroke}" '
                           f'stroke-width="1.2"/>')
                text = _fit(label, _ms(dur), bw - 8)
                if text is not None:
                    out.append(f'<text x="{bx + 4:.1f}" y="{by + BAR_H / 2 + 4:.1f}" '
                               f'font-size="11" fill="{ink}">{_e(text)}</text>')
                else:  # too narrow: to the right of the bar when the row is free there
                    nxt = x(float(row[j + 1]["start_us"])) if j + 1 < len(row) else GUTTER + plot_w + RIGHT
                    text = _fit(label, _ms(dur), nxt - (bx + bw) - 8)
                    if text is not None:
                        out.append(f'<text x="{bx + bw + 3:.1f}" y="{by + BAR_H / 2 + 4:.1f}" '
                                   f'font-size="11" fill="{ink}">{_e(text)}</text>')
                out.append('</g>')
        y += lane_h

    legend_y = height - 14
    note = ("bars: the call on the main thread and each <forked function> task on the thread "
            "that started it; a task that waited is drawn until it finished (other tasks may "
            "have run on its thread meanwhile)")
    out.append(f'<text x="16" y="{legend_y}" font-size="11" fill="{_C["text"]}">{_e(note)}</text>')
    out.append('</svg>')
    return "\n".join(out) + "\n"
