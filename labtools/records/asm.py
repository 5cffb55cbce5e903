"""labtools' readings written as Allotrope Simple Model (ASM) JSON, without allotropy (whose
pins exclude the jsonschema labtools needs); :mod:`labtools.records.asm_read` reads ASM.

Written: a journal's plate reads as one plate-reader document (``REC/2025/03``, the newest
plate-reader schema allotropy 0.1.150 ships) and its spectrometer spectra as one
spectrophotometry document (``BENCHLING/2023/12``: of the two spectrophotometry schemas shipped,
the only one that holds an absorption spectrum cube; ``REC/2024/06`` holds point absorbances
only). Read: any ASM plate-reader or spectrophotometry document, into :class:`AsmDocument`.

Absorbance units: the ASM schemas fix absorbance at ``mAU``. labtools writes milli-absorbance
(the reading × 1000). allotropy's converters copy the instrument's printed absorbance into the
``mAU`` field unscaled [V: Gen5 ``endpoint_pathlength_correct_singleplate.txt`` prints 0.056 at
977 nm where its ASM has 0.056 "mAU"; NanoDrop 8000 example04 prints A260 10.854, ASM 10.854
"mAU"]. The reader therefore gives absorbance in AU: divided by 1000 unless the document names
an allotropy converter (``ASM converter name`` starting ``allotropy``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from labtools.records.readings import Reading, Resolve, Spectrum, readings, spectra

__all__ = [
    "MAU_PER_AU",
    "PLATE_READER_KEY",
    "PLATE_READER_MANIFEST",
    "SPECTROPHOTOMETRY_KEY",
    "SPECTROPHOTOMETRY_MANIFEST",
    "AsmDevice",
    "plate_reader_asm",
    "spectrophotometry_asm",
]

PLATE_READER_MANIFEST = (
    "http://purl.allotrope.org/manifests/plate-reader/REC/2025/03/plate-reader.manifest"
)
SPECTROPHOTOMETRY_MANIFEST = (
    "http://purl.allotrope.org/manifests/spectrophotometry/BENCHLING/2023/12/"
    "spectrophotometry.manifest"
)
#: the aggregate documents of the two techniques
PLATE_READER_KEY = "plate reader aggregate document"
SPECTROPHOTOMETRY_KEY = "spectrophotometry aggregate document"
#: the ASM result field and unit of each labtools measurement
_FIELD = {"absorbance": ("absorbance", "mAU"), "fluorescence": ("fluorescence", "RFU")}
_FIELD["luminescence"] = ("luminescence", "RLU")
MAU_PER_AU = 1000.0  # mAU per AU [C]


@dataclass(frozen=True)
class AsmDevice:
    """The instrument a document names (ASM's device system document)."""

    identifier: str = "N/A"  # labtools: the instrument's name in the lab
    model: str = "N/A"
    serial: str | None = None
    manufacturer: str | None = None


def plate_reader_asm(
    events: Iterable[dict[str, Any]],
    resolve: Resolve | None = None,
    *,
    device: AsmDevice | None = None,
    file_name: str = "plate_reads.asm.json",
) -> dict[str, Any] | None:
    """The journal's plate reads as one ASM plate-reader document (``None``: no plate read).
    One plate reader document per read call; points for endpoint reads, an absorption spectrum
    cube per well for spectrum reads, an absorption profile cube per well for kinetic reads.
    Over-range values are left out of points and are ``null`` in cubes, with an error document
    naming them."""
    events = list(events)
    values = readings(events, resolve)
    if not values:
        return None
    times = _times(events)
    by_read: dict[int, list[Reading]] = {}
    for r in values:
        by_read.setdefault(r.read, []).append(r)
    verbs = {e["seq"]: _verb(e) for e in events if "seq" in e}
    documents = []
    for read, rows in by_read.items():
        verb = verbs.get(read, "")
        if verb == "read_absorbance_spectrum":
            items = _cubes(read, rows, "wavelength")
        elif verb == "read_absorbance_kinetic":
            items = _cubes(read, rows, "time")
        else:
            items = [_point(read, r) for r in rows]
        wells = {r.well for r in rows}
        documents.append(
            {
                "measurement aggregate document": {
                    "measurement time": times.get(read, _EPOCH),
                    "plate well count": {"value": _well_count(wells), "unit": "#"},
                    "container type": "well plate",
                    "measurement document": items,
                }
            }
        )
    name = device or AsmDevice(identifier=_instrument(events, _READS) or "N/A")
    return {
        "$asm.manifest": PLATE_READER_MANIFEST,
        PLATE_READER_KEY: {
            "device system document": _device(name),
            "data system document": _data_system(file_name),
            "plate reader document": documents,
        },
    }


def spectrophotometry_asm(
    events: Iterable[dict[str, Any]],
    resolve: Resolve | None = None,
    *,
    device: AsmDevice | None = None,
    file_name: str = "spectra.asm.json",
) -> dict[str, Any] | None:
    """The journal's spectrometer spectra (``measure_absorbance``) as one ASM
    spectrophotometry document, one absorption spectrum cube each (``None``: none taken)."""
    events = list(events)
    found = [s for s in spectra(events, resolve) if _is_spectrometer(events, s)]
    if not found:
        return None
    times = _times(events)
    documents = []
    for s in found:
        item: dict[str, Any] = {
            "measurement identifier": f"labtools-{s.read}",
            "device control aggregate document": {
                "device control document": [
                    {"device type": "spectrophotometer", "detection type": "absorbance"}
                ]
            },
            "sample document": {"sample identifier": s.title},
            "absorption spectrum data cube": _cube(
                "absorption spectrum", "wavelength", "nm", s.wavelengths, _milli(s.absorbance)
            ),
        }
        _errors(item, s.wavelengths, s.absorbance, "nm")
        documents.append(
            {
                "measurement aggregate document": {
                    "measurement time": times.get(s.read, _EPOCH),
                    "measurement document": [item],
                }
            }
        )
    name = device or AsmDevice(identifier=_instrument(events, {"measure_absorbance"}) or "N/A")
    return {
        "$asm.manifest": SPECTROPHOTOMETRY_MANIFEST,
        SPECTROPHOTOMETRY_KEY: {
            "device system document": _device(name),
            "data system document": _data_system(file_name),
            "spectrophotometry document": documents,
        },
    }


_EPOCH = "1970-01-01T00:00:00+00:00"


def _verb(event: Mapping[str, Any]) -> str:
    tool = event.get("tool")
    if not event.get("ok") or not isinstance(tool, str):
        return ""
    return tool.partition("_")[2]


def _times(events: list[dict[str, Any]]) -> dict[int, str]:
    """Each call's journal time (Unix seconds) as ISO 8601 UTC."""
    out = {}
    for e in events:
        if isinstance(e.get("seq"), int) and isinstance(e.get("time"), int | float):
            out[e["seq"]] = datetime.fromtimestamp(e["time"], UTC).isoformat()
    return out


def _instrument(events: list[dict[str, Any]], verbs: set[str]) -> str:
    """The lab's name for the instrument of the first call with one of ``verbs``."""
    for e in events:
        if _verb(e) in verbs:
            name: str = e["tool"].partition("_")[0]
            return name
    return ""


_READS = {
    "read_absorbance",
    "read_absorbance_spectrum",
    "read_absorbance_kinetic",
    "read_fluorescence",
    "read_luminescence",
}


def _is_spectrometer(events: list[dict[str, Any]], spectrum: Spectrum) -> bool:
    return any(e.get("seq") == spectrum.read and _verb(e) == "measure_absorbance" for e in events)


def _device(device: AsmDevice) -> dict[str, Any]:
    out: dict[str, Any] = {"device identifier": device.identifier, "model number": device.model}
    if device.serial is not None:
        out["equipment serial number"] = device.serial
    if device.manufacturer is not None:
        out["product manufacturer"] = device.manufacturer
    return out


def _data_system(file_name: str) -> dict[str, Any]:
    try:
        version = metadata.version("labtools-sdk")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "ASM file identifier": file_name,
        "data system instance identifier": "N/A",
        "file name": file_name,
        "UNC path": file_name,
        "ASM converter name": "labtools",
        "ASM converter version": version,
        "software name": "labtools",
        "software version": version,
    }


def _well_count(wells: set[str]) -> int:
    """96, or 384 when a well lies beyond H12 (the plate-grid CSV's rule)."""
    for well in wells:
        row = well.rstrip("0123456789")
        column = well[len(row) :]
        if len(row) > 1 or row > "H" or (column.isdigit() and int(column) > 12):
            return 384
    return 96


def _sample(r: Reading) -> dict[str, Any]:
    return {
        "location identifier": r.well,
        "sample identifier": f"{r.plate} {r.well}",
        "well plate identifier": r.plate,
    }


def _control(r: Reading) -> dict[str, Any]:
    control: dict[str, Any] = {"device type": "plate reader", "detection type": r.measurement}
    if r.wavelength is not None:
        control["detector wavelength setting"] = {"value": r.wavelength, "unit": "nm"}
    if r.excitation is not None:
        control["excitation wavelength setting"] = {"value": r.excitation, "unit": "nm"}
    return {"device control document": [control]}


def _point(read: int, r: Reading) -> dict[str, Any]:
    field, unit = _FIELD[r.measurement]
    nm = "" if r.wavelength is None else f"-{r.wavelength:g}"
    item: dict[str, Any] = {
        "measurement identifier": f"labtools-{read}-{r.well}{nm}",
        "sample document": _sample(r),
        "device control aggregate document": _control(r),
    }
    if r.value is None:
        item["error aggregate document"] = {
            "error document": [{"error": "over range", "error feature": field}]
        }
    else:
        scale = MAU_PER_AU if r.measurement == "absorbance" else 1.0
        item[field] = {"value": r.value * scale, "unit": unit}
    return item


def _cubes(read: int, rows: list[Reading], axis: str) -> list[dict[str, Any]]:
    by_well: dict[str, list[Reading]] = {}
    for r in rows:
        by_well.setdefault(r.well, []).append(r)
    items = []
    for well, series in by_well.items():
        first = series[0]
        if axis == "wavelength":
            xs = [float(r.wavelength or 0.0) for r in series]
            cube = ("absorption spectrum data cube", "absorbance spectrum", "wavelength", "nm")
            control = _control(Reading(read, "absorbance", first.plate, well, *(None,) * 4, ""))
        else:
            xs = [float(r.time or 0.0) for r in series]
            cube = ("absorption profile data cube", "absorbance profile", "elapsed time", "s")
            control = _control(first)
        ys = [r.value for r in series]
        item: dict[str, Any] = {
            "measurement identifier": f"labtools-{read}-{well}",
            "sample document": _sample(first),
            "device control aggregate document": control,
            cube[0]: _cube(cube[1], cube[2], cube[3], xs, _milli(ys)),
        }
        _errors(item, xs, ys, cube[3])
        items.append(item)
    return items


def _cube(
    label: str, concept: str, unit: str, xs: list[float], ys: list[float | None]
) -> dict[str, Any]:
    return {
        "label": label,
        "cube-structure": {
            "dimensions": [{"@componentDatatype": "double", "concept": concept, "unit": unit}],
            "measures": [{"@componentDatatype": "double", "concept": "absorbance", "unit": "mAU"}],
        },
        "data": {"dimensions": [list(xs)], "measures": [list(ys)]},
    }


def _milli(values: Iterable[float | None]) -> list[float | None]:
    return [None if v is None else v * MAU_PER_AU for v in values]


def _errors(item: dict[str, Any], xs: list[float], ys: list[float | None], unit: str) -> None:
    over = [x for x, y in zip(xs, ys, strict=True) if y is None]
    if over:
        item["error aggregate document"] = {
            "error document": [
                {"error": "over range", "error feature": f"{x:g} {unit}"} for x in over
            ]
        }
