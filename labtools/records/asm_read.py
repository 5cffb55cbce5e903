"""Allotrope Simple Model (ASM) plate-reader and spectrophotometry documents read into
:class:`AsmDocument`: per value the well, wavelength(s), value and unit, the plate and
measurement ids, and the instrument; per data cube the spectrum or kinetic profile. Absorbance
comes out in AU (see :mod:`labtools.records.asm` for allotropy's unscaled ``mAU``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from labtools.errors import InvalidArguments
from labtools.records.asm import MAU_PER_AU, PLATE_READER_KEY, SPECTROPHOTOMETRY_KEY, AsmDevice

__all__ = ["AsmDocument", "AsmMeasurement", "AsmSeries", "read_asm"]

_CUBES = {  # cube name → (measurement kind, axis)
    "absorption spectrum data cube": ("absorbance", "wavelength"),
    "absorption profile data cube": ("absorbance", "elapsed time"),
    "fluorescence emission profile data cube": ("fluorescence", "elapsed time"),
    "luminescence profile data cube": ("luminescence", "elapsed time"),
}
#: each point result and its unit when the document gives none
_UNITS = {"absorbance": "AU", "fluorescence": "RFU", "luminescence": "RLU"}
#: (aggregate document, technique, the list of its documents)
_TECHNIQUES = (
    (PLATE_READER_KEY, "plate reader", "plate reader document"),
    (SPECTROPHOTOMETRY_KEY, "spectrophotometry", "spectrophotometry document"),
)


@dataclass(frozen=True)
class AsmMeasurement:
    """One point value: a well (or cuvette sample) at a wavelength."""

    kind: str  # absorbance, fluorescence or luminescence
    measurement_id: str
    plate: str | None  # well plate identifier
    well: str | None  # location identifier
    sample: str | None  # sample identifier
    role: str | None  # sample role type (standard, blank, unknown …) where given
    wavelength: float | None  # nm; emission wavelength for fluorescence
    excitation: float | None  # nm
    value: float | None  # AU for absorbance, else as written; None: the document gives an error
    unit: str  # "AU", "RFU", "RLU"
    time: str | None  # measurement time (ISO 8601)
    well_count: int | None
    well_volume_ul: float | None
    path_length_cm: float | None  # the cell path length setting, where given
    temperature_c: float | None  # compartment temperature
    error: str | None  # the error document's text for this value, where given
    #: the device control's custom information (Gen5 "Reading Type", Lunatic "path length mode")
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AsmSeries:
    """One data cube: a well's spectrum (axis ``wavelength``, nm) or kinetic profile (axis
    ``elapsed time``, s)."""

    kind: str
    measurement_id: str
    plate: str | None
    well: str | None
    sample: str | None
    axis: str
    x: tuple[float, ...]
    y: tuple[float | None, ...]
    unit: str
    wavelength: float | None  # the detector wavelength of a profile
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AsmDocument:
    manifest: str
    technique: str  # "plate reader" or "spectrophotometry"
    device: AsmDevice
    software: str | None
    converter: str | None
    measurements: tuple[AsmMeasurement, ...]
    series: tuple[AsmSeries, ...]
    #: calculated data: name → {source measurement id → value}, e.g. Gen5's "260:Pathlength"
    calculated: dict[str, dict[str, float]]

    def calculated_by_well(self, name: str) -> dict[str, float]:
        """A calculated value per well, through the first measurement it was computed from."""
        wells = {m.measurement_id: m.well for m in self.measurements}
        out: dict[str, float] = {}
        for source, value in self.calculated.get(name, {}).items():
            well = wells.get(source)
            if well is not None:
                out[well] = value
        return out


# --- writing -----------------------------------------------------------------------------------


def read_asm(source: str | Path | Mapping[str, Any]) -> AsmDocument:
    """An ASM plate-reader or spectrophotometry document (a path or the parsed JSON)."""
    if isinstance(source, str | Path):
        try:
            doc: Any = json.loads(Path(source).read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidArguments(f"cannot read ASM JSON from {source}: {exc}") from exc
    else:
        doc = source
    if not isinstance(doc, Mapping) or not isinstance(doc.get("$asm.manifest"), str):
        raise InvalidArguments(
            "not an ASM document: no $asm.manifest",
            field="/$asm.manifest",
            hint="an Allotrope Simple Model JSON object",
        )
    manifest = doc["$asm.manifest"]
    found = [t for t in _TECHNIQUES if isinstance(doc.get(t[0]), Mapping)]
    if not found:
        raise InvalidArguments(
            f"ASM document {manifest} is neither plate reader nor spectrophotometry",
            field="",
            hint=f"a document with '{PLATE_READER_KEY}' or '{SPECTROPHOTOMETRY_KEY}'",
        )
    top, technique, key = found[0]
    agg = doc[top]
    system = agg.get("data system document") or {}
    converter = system.get("ASM converter name")
    scale = 1.0 if str(converter or "").startswith("allotropy") else 1.0 / MAU_PER_AU
    measurements: list[AsmMeasurement] = []
    series: list[AsmSeries] = []
    documents = agg.get(key)
    if not isinstance(documents, list):
        raise InvalidArguments(f"the document has no '{key}' list", field=f"/{top}/{key}")
    for n, document in enumerate(documents):
        group = document.get("measurement aggregate document") if _is_map(document) else None
        group = group if _is_map(group) else {}
        items = group.get("measurement document")
        if not isinstance(items, list) or not all(_is_map(item) for item in items):
            raise InvalidArguments(
                f"{key} {n} has no list of measurement documents",
                field=f"/{top}/{key}/{n}/measurement aggregate document/measurement document",
            )
        context = _Context(
            time=group.get("measurement time"),
            well_count=_number(group.get("plate well count")),
            volume=_volume(group.get("well volume")),
        )
        for item in items:
            _read_item(item, context, scale, measurements, series)
    return AsmDocument(
        manifest=manifest,
        technique=technique,
        device=_read_device(agg.get("device system document") or {}),
        software=system.get("software name"),
        converter=converter,
        measurements=tuple(measurements),
        series=tuple(series),
        calculated=_calculated(agg),
    )


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


@dataclass(frozen=True)
class _Context:
    time: str | None
    well_count: float | None
    volume: float | None


def _number(quantity: Any) -> float | None:
    if isinstance(quantity, Mapping) and isinstance(quantity.get("value"), int | float):
        return float(quantity["value"])
    return None


def _volume(quantity: Any) -> float | None:
    """A volume in µL (ASM writes µL or mL)."""
    value = _number(quantity)
    if value is None:
        return None
    return value * 1000.0 if quantity.get("unit") == "mL" else value


def _read_device(system: Mapping[str, Any]) -> AsmDevice:
    return AsmDevice(
        identifier=str(system.get("device identifier", "N/A")),
        model=str(system.get("model number", "N/A")),
        serial=system.get("equipment serial number"),
        manufacturer=system.get("product manufacturer"),
    )


def _read_item(
    item: Mapping[str, Any],
    context: _Context,
    scale: float,
    measurements: list[AsmMeasurement],
    series: list[AsmSeries],
) -> None:
    sample = item.get("sample document") or {}
    controls = (item.get("device control aggregate document") or {}).get(
        "device control document"
    ) or [{}]
    control = controls[0]
    wavelength = _number(control.get("detector wavelength setting"))
    excitation = _number(control.get("excitation wavelength setting"))
    path = control.get("cell path length setting") or item.get("cell path length")
    path_cm = _number(path)
    if path_cm is not None and isinstance(path, Mapping) and path.get("unit") == "mm":
        path_cm /= 10.0
    custom = control.get("custom information document") or {}
    notes = {str(k): str(v) for k, v in custom.items() if isinstance(v, str | int | float)}
    errors = (item.get("error aggregate document") or {}).get("error document") or []
    error = "; ".join(str(e.get("error")) for e in errors) or None
    mid = str(item.get("measurement identifier", ""))
    where = (sample.get("well plate identifier"), sample.get("location identifier"))
    kinds = [k for k in _UNITS if k in item]
    detection = str(control.get("detection type", "")).lower()
    if not kinds and error and detection in _UNITS and not any(c in item for c in _CUBES):
        kinds = [detection]  # a value the instrument could not give (over range): None
    for kind in kinds:
        result = item.get(kind)
        value = _number(result)
        unit = "AU" if kind == "absorbance" else str((result or {}).get("unit", _UNITS[kind]))
        if value is not None and kind == "absorbance":
            value *= scale
        measurements.append(
            AsmMeasurement(
                kind=kind,
                measurement_id=mid,
                plate=where[0],
                well=where[1],
                sample=sample.get("sample identifier"),
                role=sample.get("sample role type"),
                wavelength=wavelength,
                excitation=excitation,
                value=value,
                unit=unit,
                time=context.time,
                well_count=None if context.well_count is None else int(context.well_count),
                well_volume_ul=context.volume,
                path_length_cm=path_cm,
                temperature_c=_number(item.get("compartment temperature")),
                error=error,
                notes=notes,
            )
        )
    for name, (kind, axis) in _CUBES.items():
        cube = item.get(name)
        if not isinstance(cube, Mapping):
            continue
        data = cube.get("data") or {}
        try:
            xs = tuple(float(x) for x in data["dimensions"][0])
            raw = data["measures"][0]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise InvalidArguments(f"{mid}: {name} has no data ({exc})", field=f"/{name}") from exc
        if len(raw) != len(xs):
            raise InvalidArguments(f"{mid}: {name} has {len(xs)} x and {len(raw)} values")
        factor = scale if kind == "absorbance" else 1.0
        ys = tuple(None if y is None else float(y) * factor for y in raw)
        measures = (cube.get("cube-structure") or {}).get("measures") or [{}]
        unit = "AU" if kind == "absorbance" else str(measures[0].get("unit", ""))
        sample_id = sample.get("sample identifier")
        series.append(
            AsmSeries(kind, mid, *where, sample_id, axis, xs, ys, unit, wavelength, notes)
        )


def _calculated(agg: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    documents = (agg.get("calculated data aggregate document") or {}).get(
        "calculated data document"
    ) or []
    for doc in documents:
        value = _number(doc.get("calculated result"))
        sources = (doc.get("data source aggregate document") or {}).get("data source document")
        if value is None or not sources:
            continue
        first = str(sources[0].get("data source identifier"))
        out.setdefault(str(doc.get("calculated data name")), {})[first] = value
    return out
