"""ASM read back: real instrument exports (tests/data/real, from allotropy's MIT test data) and
labtools' own ASM, value for value; bad documents refused with a structured error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
import pytest

from labtools import Lab
from labtools.errors import InvalidArguments
from labtools.records import (
    AsmDevice,
    plate_reader_asm,
    read_asm,
    readings,
    spectra,
    spectrophotometry_asm,
)
from tests.reading_run import every_reading

REAL = Path(__file__).parent / "data" / "real"
NM = "nanometer"


def _qty(value: float, unit: str) -> dict[str, Any]:
    return {"value": value, "unit": unit}


def test_the_gen5_path_check_plate_reads_as_94_samples_and_two_blanks() -> None:
    doc = read_asm(REAL / "gen5_pathcheck_dna" / "endpoint_pathlength_correct_singleplate.json")
    assert (doc.technique, doc.software, doc.converter) == (
        "plate reader",
        "Gen5",
        "allotropy_agilent_gen5",
    )
    assert doc.device == AsmDevice("N/A", "Generic Reader", "12345678", None)
    by_nm: dict[float | None, dict[str | None, Any]] = {}
    for m in doc.measurements:
        by_nm.setdefault(m.wavelength, {})[m.well] = m
    assert sorted(k for k in by_nm if k is not None) == [230.0, 260.0, 280.0, 900.0, 977.0]
    assert all(len(wells) == 96 for wells in by_nm.values())
    a1 = by_nm[977.0]["A1"]
    assert (a1.value, a1.unit, a1.plate, a1.sample, a1.temperature_c) == (
        0.056,
        "AU",
        "Plate 1",
        "SPL1",
        26.3,
    )
    assert a1.well_count == 96 and a1.time == "2023-09-15T12:30:00+00:00"
    assert a1.notes == {"Reading Type": "Reader"}
    blanks = sorted(w for w, m in by_nm[977.0].items() if m.sample == "BLK")
    assert blanks == ["G12", "H12"]
    water = np.array(
        [by_nm[977.0][w].value - by_nm[900.0][w].value for w in by_nm[977.0] if w not in blanks]
    )
    # the 977-900 nm water peak of 94 sample wells: 0.019 AU median, 2 of 94 above 0.025
    assert len(water) == 94
    assert np.median(water) == pytest.approx(0.019, abs=1e-9)
    assert water.mean() == pytest.approx(0.01991, abs=1e-4)
    assert water.std(ddof=1) == pytest.approx(0.00255, abs=1e-4)
    # Gen5's own path: (A977 - A900) / 0.18 [K-factor printed in the export], in cm
    path = doc.calculated_by_well("260:Pathlength")
    assert len(path) == 96 and path["A1"] == 0.114 and path["G12"] == 0.284
    assert pytest.approx(path["A1"], abs=0.003) == (0.056 - 0.035) / 0.18


def test_the_skanit_elisa_plate_has_a_duplicate_standard_series_and_blanks() -> None:
    doc = read_asm(REAL / "skanit_elisa_450" / "skanit_data.json")
    assert doc.device.model == "Varioskan LUX" and doc.device.serial == "3020-81776"
    assert {m.wavelength for m in doc.measurements} == {450.0} and len(doc.measurements) == 96
    standards: dict[str, list[float]] = {}
    for m in doc.measurements:
        if m.role == "standard sample role":
            standards.setdefault(str(m.sample), []).append(float(m.value or 0.0))
    assert len(standards) == 7 and all(len(pair) == 2 for pair in standards.values())
    means = [sum(pair) / 2 for _, pair in sorted(standards.items())]
    assert means == sorted(means, reverse=True)  # a falling dilution series
    assert means[0] == pytest.approx((1.7455 + 1.6148) / 2)
    blanks = [m.value for m in doc.measurements if m.role == "blank role"]
    assert blanks == [0.0905, 0.0916]


def test_the_nanodrop_reads_nine_dna_samples_at_260_and_280() -> None:
    doc = read_asm(REAL / "nanodrop8000_dna" / "Thermo_NanoDrop_8000_example04.json")
    assert doc.technique == "spectrophotometry" and doc.device.model == "Nanodrop 8000"
    a260 = {m.sample: m.value for m in doc.measurements if m.wavelength == 260}
    a280 = {m.sample: m.value for m in doc.measurements if m.wavelength == 280}
    assert len(a260) == len(a280) == 9 and a260["alpha"] == 10.854
    ratios = [a260[s] / a280[s] for s in a260]  # type: ignore[operator]
    assert median(ratios) == pytest.approx(1.83, abs=0.01)  # clean double-stranded DNA


def test_the_lunatic_uv_spectra_are_three_cubes_from_230_to_350_nm() -> None:
    doc = read_asm(REAL / "lunatic_uv_spectrum" / "spectrum_measurement.json")
    assert doc.device.manufacturer == "Unchained Labs" and doc.device.identifier == "401277"
    assert [s.sample for s in doc.series] == ["sample_A1", "reference_A3", "blank_B3"]
    sample = doc.series[0]
    assert sample.axis == "wavelength" and sample.unit == "AU" and len(sample.x) == 121
    assert (sample.x[0], sample.x[-1], sample.y[0]) == (230.0, 350.0, 0.728)
    assert sample.notes["path length mode"] == "single"
    assert set(doc.series[2].y) == {0.0}  # the blank, subtracted from itself


@pytest.fixture(scope="module")
def run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with Lab.virtual(seed=3) as lab:
        return every_reading(lab)


def test_labtools_asm_reads_back_value_for_value(run) -> None:
    events, whole = run
    document = plate_reader_asm(events, whole.get)
    assert document is not None
    raw = document["plate reader aggregate document"]["plate reader document"][0]
    point = raw["measurement aggregate document"]["measurement document"][0]
    values = readings(events, whole.get)
    first = values[0]
    assert point["absorbance"] == {"value": first.value * 1000, "unit": "mAU"}  # type: ignore[operator]
    back = read_asm(json.loads(json.dumps(document)))
    assert back.converter == "labtools" and back.device.identifier == "reader"
    points = {(m.kind, m.well, m.wavelength): m for m in back.measurements}
    spectrum_read = next(e["seq"] for e in events if e["tool"] == "reader_read_absorbance_spectrum")
    kinetic_read = next(e["seq"] for e in events if e["tool"] == "reader_read_absorbance_kinetic")
    for r in values:
        if r.read in (spectrum_read, kinetic_read):
            continue  # those are series
        m = points[(r.measurement, r.well, r.wavelength)]
        assert m.value == (None if r.value is None else pytest.approx(r.value))
        assert m.excitation == r.excitation and m.plate == r.plate
    by_axis = {
        axis: [s for s in back.series if s.axis == axis] for axis in ("wavelength", "elapsed time")
    }
    (kinetic,) = by_axis["elapsed time"]
    assert kinetic.x == (0.0, 10.0, 20.0)
    assert list(kinetic.y) == pytest.approx([r.value for r in values if r.read == kinetic_read])
    assert [s.x for s in by_axis["wavelength"]] == [(400.0, 420.0, 440.0, 460.0, 480.0, 500.0)] * 2
    spectral = [r.value for r in values if r.read == spectrum_read]
    assert [y for s in by_axis["wavelength"] for y in s.y] == pytest.approx(spectral)
    spectro = read_asm(spectrophotometry_asm(events, whole.get) or {})
    (spectrum,) = spectro.series
    measured = next(e["seq"] for e in events if e["tool"] == "spec_measure_absorbance")
    (taken,) = (t for t in spectra(events, whole.get) if t.read == measured)
    assert spectrum.x == tuple(taken.wavelengths) and len(spectrum.x) > 1000
    kept = [(a, b) for a, b in zip(spectrum.y, taken.absorbance, strict=True) if b is not None]
    assert [a for a, _ in kept] == pytest.approx([b for _, b in kept])
    # pixels without absorbance (no light through): null in the cube, each named in an error
    gaps = [x for x, y in zip(spectrum.x, taken.absorbance, strict=True) if y is None]
    assert [x for x, y in zip(spectrum.x, spectrum.y, strict=True) if y is None] == gaps
    assert gaps and spectrum.notes == {}


def test_the_same_run_writes_the_same_asm(run) -> None:
    events, whole = run
    once = json.dumps(plate_reader_asm(events, whole.get), sort_keys=True)
    again = json.dumps(plate_reader_asm(list(events), whole.get), sort_keys=True)
    assert once == again and plate_reader_asm([]) is None and spectrophotometry_asm([]) is None


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"no": "manifest"}, "/$asm.manifest"),
        ({"$asm.manifest": "http://x/manifests/pcr.manifest", "qpcr aggregate document": {}}, ""),
        (
            {"$asm.manifest": "m", "plate reader aggregate document": {"plate reader document": 3}},
            "/plate reader aggregate document/plate reader document",
        ),
        (
            {
                "$asm.manifest": "m",
                "plate reader aggregate document": {"plate reader document": [{"x": 1}]},
            },
            "/plate reader aggregate document/plate reader document/0/measurement aggregate "
            "document/measurement document",
        ),
    ],
)
def test_a_bad_document_is_refused_with_the_field_to_blame(document, field) -> None:
    with pytest.raises(InvalidArguments) as refused:
        read_asm(document)
    assert refused.value.field == field


def test_a_file_that_is_not_json_is_refused(tmp_path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidArguments, match="cannot read ASM JSON"):
        read_asm(path)


def test_export_format_asm_writes_both_documents(tmp_path) -> None:
    journal = tmp_path / "journal.jsonl"
    with Lab.virtual(seed=2, journal=journal) as lab:
        lab.call("lh_move_plate", {"plate": "plate_1", "destination": "reader"}).unwrap()
        lab.call(
            "reader_read_absorbance",
            {"plate": "plate_1", "wavelength": _qty(600, NM), "wells": ["A1", "A2"]},
        ).unwrap()
        lab.call("spec_set_integration_time", {"time": _qty(100, "millisecond")}).unwrap()
        lab.call("spec_acquire_dark", {"scans": 1}).unwrap()
        lab.call("spec_acquire_reference", {"scans": 1}).unwrap()
        lab.call("spec_measure_absorbance", {"scans": 1}).unwrap()
    out = tmp_path / "asm"
    command = [sys.executable, "-m", "labtools", "export", str(journal), "--out", str(out)]
    done = subprocess.run([*command, "--format", "asm"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    plate = read_asm(out / "plate_reads.asm.json")
    assert [m.well for m in plate.measurements] == ["A1", "A2"]
    assert read_asm(out / "spectra.asm.json").technique == "spectrophotometry"


def test_a_value_the_instrument_could_not_give_reads_as_none_with_its_error() -> None:
    """As allotropy writes Gen5's ``OVRFLW``: an error document and no result field."""
    item = {
        "measurement identifier": "m1",
        "sample document": {"location identifier": "B7", "well plate identifier": "P"},
        "device control aggregate document": {
            "device control document": [
                {
                    "device type": "plate reader",
                    "detection type": "Absorbance",
                    "detector wavelength setting": {"value": 450.0, "unit": "nm"},
                }
            ]
        },
        "error aggregate document": {"error document": [{"error": "OVRFLW"}]},
    }
    group = {"measurement time": "2024-01-01T00:00:00+00:00", "measurement document": [item]}
    document = {
        "$asm.manifest": "m",
        "plate reader aggregate document": {
            "data system document": {"ASM converter name": "allotropy_agilent_gen5"},
            "plate reader document": [{"measurement aggregate document": group}],
        },
    }
    (m,) = read_asm(document).measurements
    assert (m.kind, m.well, m.wavelength, m.value, m.unit, m.error) == (
        "absorbance",
        "B7",
        450.0,
        None,
        "AU",
        "OVRFLW",
    )
