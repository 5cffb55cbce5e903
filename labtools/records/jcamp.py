"""Absorbance spectra as JCAMP-DX 4.24 (McDonald & Wilks, Appl. Spectrosc. 42, 151, 1988):
labelled header lines, then the points as ``##XYPOINTS=(XY..XY)`` pairs in plain decimals
(AFFN), which keep the spectrometer's unevenly spaced pixel wavelengths exact."""

from __future__ import annotations

from labtools.records.readings import Spectrum

__all__ = ["jcamp_dx"]

PAIRS_PER_LINE = 4


def jcamp_dx(spectrum: Spectrum, *, origin: str = "labtools", owner: str = "") -> str:
    """One spectrum as a JCAMP-DX text; over-range points (``None``) are left out."""
    points = [
        (x, y)
        for x, y in zip(spectrum.wavelengths, spectrum.absorbance, strict=True)
        if y is not None
    ]
    if not points:
        raise ValueError(f"{spectrum.title}: no point in range to write")
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    header = {
        "TITLE": spectrum.title,
        "JCAMP-DX": "4.24",
        "DATA TYPE": "UV/VIS SPECTRUM",
        "ORIGIN": origin,
        "OWNER": owner or "public",
        **{f"${k.upper()}": v for k, v in spectrum.notes.items()},
        "XUNITS": "NANOMETERS",
        "YUNITS": "ABSORBANCE",
        "XFACTOR": "1",
        "YFACTOR": "1",
        "FIRSTX": repr(xs[0]),
        "LASTX": repr(xs[-1]),
        "MINY": repr(min(ys)),
        "MAXY": repr(max(ys)),
        "NPOINTS": str(len(points)),
    }
    lines = [f"##{label}={value}" for label, value in header.items()]
    lines.append("##XYPOINTS=(XY..XY)")
    for start in range(0, len(points), PAIRS_PER_LINE):
        chunk = points[start : start + PAIRS_PER_LINE]
        lines.append(" ".join(f"{x!r},{y!r}" for x, y in chunk))
    lines.append("##END=")
    return "\n".join(lines) + "\n"
