"""One virtual run with every kind of reading labtools has: what the record writers (CSV, JCAMP,
bundles, ASM) are tested on."""

from __future__ import annotations

from typing import Any

from labtools import Lab

NM = "nanometer"


def qty(value: float, unit: str) -> dict[str, Any]:
    return {"value": value, "unit": unit}


def every_reading(lab: Lab) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """On ``lab`` (a virtual lab): plate_1 into the reader, then (calls 2–6) absorbance of A1, B2
    and H12 at 450 nm, a spectrum of A1 and A2 (400–500 nm by 20 nm), a kinetic read of C3 (3
    reads, 10 s apart), fluorescence of A1 and A2 (485/528 nm), luminescence of A1; then a
    spectrometer absorbance spectrum (integration time, dark, reference, sample). Returns the
    journal's events and the data behind every handle."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("lh_move_plate", {"plate": "plate_1", "destination": "reader"}),
        (
            "reader_read_absorbance",
            {"plate": "plate_1", "wavelength": qty(450, NM), "wells": ["A1", "B2", "H12"]},
        ),
        (
            "reader_read_absorbance_spectrum",
            {
                "plate": "plate_1",
                "wells": ["A1", "A2"],
                "start": qty(400, NM),
                "stop": qty(500, NM),
                "step": qty(20, NM),
            },
        ),
        (
            "reader_read_absorbance_kinetic",
            {
                "plate": "plate_1",
                "wells": ["C3"],
                "wavelength": qty(405, NM),
                "reads": 3,
                "interval": qty(10, "second"),
            },
        ),
        (
            "reader_read_fluorescence",
            {
                "plate": "plate_1",
                "wells": ["A1", "A2"],
                "excitation_wavelength": qty(485, NM),
                "emission_wavelength": qty(528, NM),
                "gain": 0,
                "focal_height": qty(0, "millimeter"),
            },
        ),
        ("reader_read_luminescence", {"plate": "plate_1", "wells": ["A1"]}),
        ("spec_set_integration_time", {"time": qty(100, "millisecond")}),
        ("spec_acquire_dark", {"scans": 1}),
        ("spec_acquire_reference", {"scans": 1}),
        ("spec_measure_absorbance", {"scans": 1}),
    ]
    for name, arguments in calls:
        lab.call(name, arguments).unwrap()
    events = lab.journal.events()
    whole = {e["data"]["data"]: lab.data(e["data"]["data"]) for e in events if has_handle(e)}
    return events, whole


def has_handle(event: dict[str, Any]) -> bool:
    """Whether a journal event's result hands out its data by handle."""
    return bool(event.get("ok")) and isinstance((event.get("data") or {}).get("data"), str)
