"""Rich HTML for notebooks: a lab's state (its decks drawn as the live view draws them, wells in
their colours with their believed volumes, its instruments and clock) and a plate reading as a
heatmap. ``Lab._repr_html_`` and ``ToolResult._repr_html_`` call these, so Jupyter shows them
for a lab or a reading's result at the end of a cell.

The HTML is self-contained (inline SVG and styles, no script, nothing fetched), so a saved
notebook shows it anywhere."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from labtools.instruments.plate_reader import ACCURATE_OD
from labtools.instruments.plate_reader_values import plate_flags
from labtools.view.scene import Scene, plate_reading

__all__ = ["lab_html", "reading_html"]

#: how a plate's heatmap marks a reading above the accurate range and a well with no number
HIGH = "#d62728"
#: the heatmap's colour map (matplotlib's), as the demo's plate map
SCALE = "YlOrBr"
_WELL = re.compile(r"^([A-Z]+)(\d+)$")


def lab_html(lab: Any) -> str:
    """The lab now: each deck as an SVG (labware, wells coloured by what they hold, tips
    present and used), then its instruments' state and the virtual clock."""
    scene = Scene(lab)
    state, _ = scene.read()
    parts = [f"<div class='labtools-lab'><b>{html.escape(type(lab).__name__)}</b>"]
    if state["clock_s"] is not None:
        parts.append(f" — virtual clock {state['clock_s']:.1f} s")
    for name, layout in scene.layout()["decks"].items():
        parts.append(_deck_svg(name, layout, state["decks"][name], state["colours"]))
    parts.append("<details><summary>instruments</summary><pre>")
    parts.append(html.escape(json.dumps(state["instruments"], indent=1, default=str)[:20_000]))
    parts.append("</pre></details></div>")
    return "".join(parts)


def _deck_svg(
    name: str, layout: dict[str, Any], drawn: dict[str, Any], colours: dict[str, str]
) -> str:
    """One deck from above, the front at the bottom (y grows to the back in PyLabRobot)."""
    width, height = layout["size"]
    flip = height  # SVG's y grows downwards
    volumes, used = drawn["volumes"], set(drawn["tips_used"])
    out = [
        f"<svg class='labtools-deck' data-deck='{html.escape(name)}' width='100%' "
        f"viewBox='-70 -10 {width + 140:.0f} {height + 20:.0f}' "
        "style='max-width:900px;background:#fafafa'>"
    ]
    for box in layout["boxes"]:
        y = flip - box["y"] - box["h"]
        out.append(
            f"<rect x='{box['x']:.1f}' y='{y:.1f}' width='{box['w']:.1f}' height='{box['h']:.1f}' "
            "fill='none' stroke='#999'><title>"
            f"{html.escape(box['name'])} ({html.escape(box['kind'])})</title></rect>"
        )
    for well in layout["wells"]:
        key = well["key"]
        fill = colours.get(key, "none")
        volume = volumes.get(key)
        tip = f"{key}: {volume:g} µL believed" if volume is not None else f"{key}: empty"
        y = flip - well["y"] - well["h"]
        shape = (
            f"<ellipse cx='{well['x'] + well['w'] / 2:.2f}' cy='{y + well['h'] / 2:.2f}' "
            f"rx='{well['w'] / 2:.2f}' ry='{well['h'] / 2:.2f}'"
            if well["round"]
            else f"<rect x='{well['x']:.2f}' y='{y:.2f}' width='{well['w']:.2f}' "
            f"height='{well['h']:.2f}'"
        )
        out.append(
            f"{shape} data-well='{html.escape(key)}' fill='{fill}' stroke='#666' "
            f"stroke-width='0.4'><title>{html.escape(tip)}</title></{shape.split()[0][1:]}>"
        )
    for spot in layout["tips"]:
        present = spot["key"] not in used
        cx, cy = spot["x"] + spot["d"] / 2, flip - spot["y"] - spot["d"] / 2
        out.append(
            f"<circle cx='{cx:.2f}' cy='{cy:.2f}'"
            f" r='{spot['d'] * 0.35:.2f}' data-tip='{html.escape(spot['key'])}' "
            f"fill='{'#8c8c8c' if present else 'none'}' stroke='#8c8c8c' stroke-width='0.4'/>"
        )
    out.append("</svg>")
    return "".join(out)


def reading_html(data: dict[str, Any]) -> str | None:
    """A plate reading (a result with ``plate`` and ``values`` per well) as a heatmap table:
    each well's OD, readings above the reader's accurate range marked ▲ with a red border,
    wells with no number (over range, saturated) marked OR; ``None`` for any other result."""
    reading = plate_reading(0, {"ok": True, "data": data})
    if reading is None:
        return None
    values: dict[str, float] = {w: v for w, v in reading["values"].items() if v is not None}
    unread = [*reading["over_range"], *reading["saturated"]]
    wells = [m for w in [*values, *unread] if (m := _WELL.match(w))]
    if not wells:
        return None
    rows = sorted({m[1] for m in wells}, key=lambda r: (len(r), r))
    columns = sorted({int(m[2]) for m in wells})
    flags = plate_flags(values, unread, ACCURATE_OD) if reading["unit"] == "OD" else {}
    top = max(values.values(), default=0.0) or 1.0
    where = f" at {reading['wavelength_nm']:g} nm" if reading["wavelength_nm"] else ""
    out = [
        f"<table class='labtools-reading' data-plate='{html.escape(reading['plate'])}' "
        "style='border-collapse:collapse;font:11px sans-serif'>"
        f"<caption>{html.escape(reading['plate'])}{where} ({html.escape(reading['unit'])})"
        "</caption><tr><th></th>" + "".join(f"<th>{c}</th>" for c in columns) + "</tr>"
    ]
    for row in rows:
        out.append(f"<tr><th>{row}</th>")
        for column in columns:
            well = f"{row}{column}"
            out.append(_cell(well, values.get(well), flags.get(well), top))
        out.append("</tr>")
    low, high = ACCURATE_OD
    out.append("</table>")
    if flags:
        out.append(
            f"<small>accurate range {low:.1f}–{high:.1f} OD: ▲ above it; OR: over range or "
            "saturated (no number)</small>"
        )
    return "".join(out)


def _cell(well: str, value: float | None, flag: str | None, top: float) -> str:
    style = "padding:3px 5px;text-align:center;border:1px solid #ddd"
    if flag == "unread":
        return (
            f"<td data-well='{well}' data-flag='unread' style='{style};color:{HIGH};"
            f"border:2px solid {HIGH}'>OR</td>"
        )
    if value is None:
        return f"<td data-well='{well}' style='{style}'></td>"
    fill = _shade(value / top)
    ink = "#fff" if value / top > 0.6 else "#000"
    text = f"{value:.3g}"
    marks = f" data-flag='{flag}'" if flag else ""
    if flag == "high":
        style += f";border:2px solid {HIGH}"
        text += "▲"
    return (
        f"<td data-well='{well}'{marks} style='{style};background:{fill};color:{ink}'>{text}</td>"
    )


def _shade(share: float) -> str:
    """The heatmap's colour for ``share`` (0–1) of the highest reading."""
    from matplotlib import colormaps, colors

    return str(colors.to_hex(colormaps[SCALE](min(max(share, 0.0), 1.0))))
