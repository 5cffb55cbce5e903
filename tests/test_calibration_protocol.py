"""The calibration runs: tool calls any lab answers, plain records, deterministic per seed (the
photometric volume check here; the gravimetric one in tests/test_calibration_gravimetric.py)."""

from __future__ import annotations

import json

import pytest

from labtools.lab import Lab
from labtools.simulators.calibration import protocol
from labtools.simulators.calibration.calibrate import RUNS, run_all


@pytest.fixture(scope="module")
def records() -> dict:
    lab = Lab.virtual(7)
    try:
        return run_all(lab, pipetting="photometric")
    finally:
        lab.close()


def test_same_seed_same_runs(records: dict) -> None:
    lab = Lab.virtual(7)
    try:
        again = run_all(lab, pipetting="photometric")
    finally:
        lab.close()
    assert json.dumps(again, sort_keys=True) == json.dumps(records, sort_keys=True)


def test_records_are_plain_json(records: dict) -> None:
    assert list(records) == [name for name in RUNS if name != "gravimetric"]
    assert json.loads(json.dumps(records)) == records


def test_calls_and_virtual_time(records: dict) -> None:
    """The runs' cost on the virtual lab: 414 tool calls, ~44 virtual minutes."""
    calls = {name: r["calls"] for name, r in records.items()}
    assert calls == {"reader": 91, "pipetting": 311, "spectrometer": 12}
    seconds = {name: round(r["virtual_s"]) for name, r in records.items()}
    assert seconds == {"reader": 635, "pipetting": 2003, "spectrometer": 5}
    assert records["reader"]["tools"]["reader_read_absorbance"] == 32
    assert records["pipetting"]["tools"]["lh_pick_up_tips"] == 41


def test_the_design_is_in_the_record(records: dict) -> None:
    reader = records["reader"]
    kinds = [w["kind"] for w in reader["wells"].values()]
    assert (kinds.count("water"), kinds.count("dye"), kinds.count("empty")) == (40, 48, 8)
    assert set(reader["filled"]["reads"]) == {str(nm) for nm in protocol.READ_NM}
    pipetting = records["pipetting"]
    assert len(pipetting["deliveries"]) == 64  # 8 channels × 4 tip types × 2 volumes
    assert len(pipetting["rounds"]) == protocol.ROUNDS + 1  # the diluent's blank, then each
    assert {d["tip_ul"] for d in pipetting["deliveries"]} == {10.0, 50.0, 300.0, 1000.0}
    darks = records["spectrometer"]["darks"]
    assert [d["integration_ms"] for d in darks] == list(protocol.DARK_MS)
    assert all(len(d["counts"]) > 400 for d in darks)


def test_a_refused_call_stops_the_run() -> None:
    lab = Lab.virtual(7)
    try:
        with pytest.raises(protocol.CalibrationFailed, match="no plate 'plate_9'"):
            protocol.reader_run(lab, plate="plate_9")
        assert lab.journal.count == 1  # only the deck was read
        with pytest.raises(protocol.CalibrationFailed) as caught:
            protocol.Recorder(lab).call("lh_aspirate", {"items": []})
        assert caught.value.code == "precondition_failed"
    finally:
        lab.close()


def test_a_record_of_other_labware_is_refused(records: dict) -> None:
    from labtools.errors import NotSupported
    from labtools.simulators.calibration.fit_reader import fit_reader

    with pytest.raises(NotSupported, match="no height-volume table"):
        fit_reader({**records["reader"], "labware": "nunc_96_wellplate"})
