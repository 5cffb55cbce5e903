"""Data out the way labs keep it: tidy and plate-grid CSV, JCAMP-DX read back by a reader this
project did not write (the ``jcamp`` package), and a run bundle under a content hash."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jcamp
import pytest

from labtools import Lab
from labtools.journal import read_journal
from labtools.records import Bundle, grid_csv, readings, spectra, tidy_csv, write_bundle
from tests.reading_run import every_reading

NM = "nanometer"


def _qty(value: float, unit: str) -> dict[str, Any]:
    return {"value": value, "unit": unit}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], dict, Path]:
    """:func:`every_reading` on a virtual lab journaled to a file."""
    journal = tmp_path_factory.mktemp("run") / "journal.jsonl"
    with Lab.virtual(seed=3, journal=journal) as lab:
        events, whole = every_reading(lab)
    return events, whole, journal


def test_tidy_csv_has_one_row_per_value_with_its_units(run) -> None:
    events, whole, _ = run
    rows = list(csv.DictReader(io.StringIO(tidy_csv(readings(events, whole.get)))))
    single = [r for r in rows if r["read"] == "2"]
    read = next(e for e in events if e["seq"] == 2)["data"]
    assert [r["well"] for r in single] == ["A1", "B2", "H12"]
    assert [float(r["value"]) for r in single] == [read["values"][w] for w in ("A1", "B2", "H12")]
    assert single[2] | {"value": ""} == {
        "read": "2",
        "measurement": "absorbance",
        "plate": "plate_1",
        "well": "H12",
        "row": "H",
        "column": "12",
        "wavelength": "450.0",
        "excitation": "",
        "wavelength_unit": NM,
        "time": "",
        "time_unit": "",
        "value": "",
        "unit": "OD",
    }
    spectrum = [r for r in rows if r["read"] == "3"]
    assert len(spectrum) == 2 * 6  # two wells × 400, 420, … 500 nm
    kinetic = [r for r in rows if r["read"] == "4"]
    assert [(r["time"], r["time_unit"]) for r in kinetic] == [
        ("0.0", "second"),
        ("10.0", "second"),
        ("20.0", "second"),
    ]


def test_the_plate_grid_lays_each_read_out_as_the_plate(run) -> None:
    events, whole, _ = run
    text = grid_csv(r for r in readings(events, whole.get) if r.read == 2)
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0] == ["read 2: plate_1 absorbance 450 nm (OD)"]
    assert lines[1] == ["", *map(str, range(1, 13))]
    grid = {line[0]: line[1:] for line in lines[2:10]}
    read = next(e for e in events if e["seq"] == 2)["data"]["values"]
    assert float(grid["A"][0]) == read["A1"] and float(grid["B"][1]) == read["B2"]
    assert float(grid["H"][11]) == read["H12"] and grid["A"][1] == "" and len(grid) == 8


def test_spectra_read_back_with_an_independent_jcamp_reader(run, tmp_path: Path) -> None:
    events, whole, _ = run
    bundle = write_bundle(events, tmp_path / "bundle", resolve=whole.get)
    files = sorted((bundle.path / "spectra").glob("*.jdx"))
    assert len(files) == 3  # two plate wells and the spectrometer's
    wells = spectra(events, whole.get)
    for path, spectrum in zip(files, wells, strict=True):
        parsed = jcamp.readfile(str(path))
        pairs = zip(spectrum.wavelengths, spectrum.absorbance, strict=True)
        kept = [(x, y) for x, y in pairs if y is not None]
        assert parsed["title"] == spectrum.title and parsed["xunits"] == "NANOMETERS"
        assert list(parsed["x"]) == pytest.approx([x for x, _ in kept], abs=1e-9)
        assert list(parsed["y"]) == pytest.approx([y for _, y in kept], abs=1e-9)
    pixels = jcamp.readfile(str(files[-1]))
    assert len(pixels["x"]) > 1000  # the spectrometer's every pixel, from the data handle


def test_a_bundle_holds_the_run_under_one_content_hash(run, tmp_path: Path) -> None:
    events, whole, _ = run
    config = tmp_path / "lab.toml"
    config.write_text("seed = 3\n", encoding="utf-8")
    first = write_bundle(events, tmp_path / "a", config=config, resolve=whole.get)
    again = write_bundle(events, tmp_path / "b", config=config, resolve=whole.get)
    assert first.hash == again.hash and first.files == again.files  # deterministic
    assert set(first.files) >= {"journal.jsonl", "lab.toml", "versions.json", "plate_reads.csv"}
    versions = json.loads((first.path / "versions.json").read_text("utf-8"))
    assert versions["labtools-sdk"] and versions["pylabrobot"]
    reopened = Bundle.open(first.path)
    assert reopened.hash == first.hash and reopened.verify() == []
    (first.path / "plate_reads.csv").write_text("tampered\n", encoding="utf-8")
    assert reopened.verify() == ["plate_reads.csv"]


def test_labtools_export_bundles_a_journal_file(run, tmp_path: Path) -> None:
    _, _, journal = run
    done = subprocess.run(
        [sys.executable, "-m", "labtools", "export", str(journal), "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    bundle = Bundle.open(tmp_path / "x")
    assert bundle.hash in done.stdout and bundle.verify() == []
    # the lab is gone, but a journal file holds the data behind each handle: every pixel, as
    # from Python with resolve=lab.data, and the lab configuration it names
    assert len(read_journal(bundle.path / "journal.jsonl")) == len(read_journal(journal))
    assert len(jcamp.readfile(str(bundle.path / "spectra" / "003.jdx"))["x"]) > 1000
    assert {"virtual_lab.toml", "lab.json"} <= set(bundle.files)
