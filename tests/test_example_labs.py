"""The example lab configurations in docs/examples load and run through the real drivers."""

from __future__ import annotations

import logging
from pathlib import Path

from labtools import Lab

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"


def test_star_dry_run_generates_star_firmware_commands(caplog) -> None:
    """The STAR chatterbox behind the very adapter the virtual lab uses emits firmware strings."""
    plr_log = logging.getLogger("pylabrobot")  # PLR's logger does not propagate to the root
    plr_log.addHandler(caplog.handler)
    with Lab.load(EXAMPLES / "star_dry_run.toml") as lab:
        assert lab.instruments["lh"].simulated  # a chatterbox: a dry run says so
        try:
            with caplog.at_level(5, logger="pylabrobot"):
                lab.lh.pick_up_tips("tips_300ul", [0])
                moves = [
                    {"source": "reservoir:A2", "destination": "plate_1:A1", "volume": "100 uL"}
                ]
                lab.lh.transfer(moves, "", "mounted", [0])
                lab.lh.move_plate("plate_1", "reader")
                reading = lab.reader.read_absorbance("plate_1", "450 nm", ["A1"])
        finally:
            plr_log.removeHandler(caplog.handler)
        firmware = " ".join(r.getMessage() for r in caplog.records)
        deck = lab.lh.get_deck()
    assert "C0TP" in firmware and "C0AS" in firmware and "C0DS" in firmware
    assert "av01000" in firmware  # 100 µL in the STAR's 0.1 µL units
    assert reading["values"] == {"A1": 0.0}  # PLR's chatterbox reader reads zeros
    assert deck["labels"]["reservoir:A2"].startswith("tartrazine")
    reservoir = next(lw for lw in deck["labware"] if lw["name"] == "reservoir")
    assert reservoir["wells"]["A2"] == 9900.0
