"""The readings of a run, out of its journal: one :class:`Reading` per plate-reader or
spectrometer result, whole where the lab can still give the data behind a handle."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reading", "Spectrum", "readings", "spectra"]

log = logging.getLogger(__name__)

#: the full data behind a result's handle (``lab.data``), or ``None`` when it is gone
Resolve = Callable[[str], dict[str, Any] | None]

_MEASUREMENT = {
    "read_absorbance": "absorbance",
    "read_absorbance_spectrum": "absorbance",
    "read_absorbance_kinetic": "absorbance",
    "read_fluorescence": "fluorescence",
    "read_luminescence": "luminescence",
}


@dataclass(frozen=True)
class Reading:
    """One value of a plate read: a well at a wavelength (and a time, for a kinetic read)."""

    read: int  # the journal's sequence number of the call
    measurement: str  # absorbance, fluorescence or luminescence
    plate: str
    well: str
    wavelength: float | None  # emission wavelength for fluorescence
    excitation: float | None
    time: float | None  # seconds from the kinetic read's start
    value: float | None  # None: over range
    unit: str


@dataclass(frozen=True)
class Spectrum:
    """One absorbance spectrum: a spectrometer's, or a plate well's."""

    read: int
    title: str
    wavelengths: list[float]  # nm
    absorbance: list[float | None]
    notes: dict[str, str] = field(default_factory=dict)


def readings(events: Iterable[dict[str, Any]], resolve: Resolve | None = None) -> list[Reading]:
    """Every plate-reader value in ``events`` (a journal), in the order read."""
    out: list[Reading] = []
    for event in events:
        verb = _verb(event)
        if verb not in _MEASUREMENT:
            continue
        data = event["data"]
        full = _whole(event, resolve)
        rows = _rows(verb, data, full)
        out += [Reading(event["seq"], _MEASUREMENT[verb], data["plate"], *row) for row in rows]
    return out


def spectra(events: Iterable[dict[str, Any]], resolve: Resolve | None = None) -> list[Spectrum]:
    """Every absorbance spectrum in ``events``: the spectrometer's (all pixels when the journal
    holds them or the handle still resolves) and each well of a plate-reader spectrum read."""
    out: list[Spectrum] = []
    for event in events:
        verb = _verb(event)
        data: dict[str, Any] = event.get("data") or {}
        if verb == "measure_absorbance":
            full = _whole(event, resolve)
            wavelengths = full["wavelengths_nm"] if full else data["wavelengths"]
            values = full["absorbance"] if full else data["absorbance"]
            time = data["integration_time"]
            notes = {
                "integration time": f"{time['value']} {time['unit']}",
                "scans": str(data["scans"]),
            }
            title = f"{event['tool']} (call {event['seq']})"
            out.append(Spectrum(event["seq"], title, wavelengths, values, notes))
        elif verb == "read_absorbance_spectrum":
            for well, values in data["values"].items():
                title = f"{data['plate']}:{well} (call {event['seq']})"
                out.append(Spectrum(event["seq"], title, data["wavelengths"], values))
    return out


def _verb(event: dict[str, Any]) -> str:
    if not event.get("ok") or not isinstance(event.get("tool"), str):
        return ""
    return event["tool"].partition("_")[2]


def _whole(event: dict[str, Any], resolve: Resolve | None) -> dict[str, Any] | None:
    """The data behind the result's handle: the journal's own copy (``payload``, in a journal
    written to a file), else what ``resolve`` still gives, else ``None`` (the inline form)."""
    payload = event.get("payload")
    if isinstance(payload, dict):
        return payload
    handle = event["data"].get("data")
    if resolve is None or not isinstance(handle, str):
        return None
    try:
        return resolve(handle)
    except Exception as exc:  # dropped from the lab's store: the inline form is exported
        log.info("data %s is no longer kept (%s); exporting the result's own values", handle, exc)
        return None


def _rows(verb: str, data: dict[str, Any], full: dict[str, Any] | None) -> list[tuple[Any, ...]]:
    """(well, wavelength, excitation, time, value, unit) for each value of one result."""
    unit = data["unit"]
    if verb == "read_absorbance":
        nm = data["wavelength"]["value"]
        return [(w, nm, None, None, v, unit) for w, v in data["values"].items()]
    if verb == "read_fluorescence":
        ex, em = data["excitation_wavelength"]["value"], data["emission_wavelength"]["value"]
        return [(w, em, ex, None, v, unit) for w, v in data["values"].items()]
    if verb == "read_luminescence":
        return [(w, None, None, None, v, unit) for w, v in data["values"].items()]
    if verb == "read_absorbance_spectrum":
        wavelengths = full["wavelengths_nm"] if full else data["wavelengths"]
        values = full["absorbance"] if full else data["values"]
        return [
            (w, nm, None, None, v, unit)
            for w, series in values.items()
            for nm, v in zip(wavelengths, series, strict=True)
        ]
    nm = data["wavelength"]["value"]  # a kinetic read (times in s)
    times = full["times_s"] if full else data["times"]
    values = full["absorbance"] if full else data["values"]
    return [
        (w, nm, None, t, v, unit)
        for w, series in values.items()
        for t, v in zip(times, series, strict=True)
    ]
