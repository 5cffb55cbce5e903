"""Errors that echo a caller's name cut it (``labtools.errors.brief``): a 1 MB well name never
comes back whole, through any of the PLR drivers' name lookups."""

from __future__ import annotations

import json

import pytest

from labtools import Lab
from labtools.demo.protocol import with_tip

HUGE = "x" * 1_000_000
UL = {"value": 10, "unit": "microliter"}


@pytest.fixture(scope="module")
def lab():
    with Lab.virtual(seed=0) as lab:
        yield lab


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "starts"),
    [
        (
            "lh_aspirate",
            {"items": [{"channel": 0, "well": HUGE, "volume": UL}]},
            "/well",
            "no labware named 'xxx",
        ),
        (
            "lh_aspirate",
            {"items": [{"channel": 0, "well": "plate_1:" + HUGE, "volume": UL}]},
            "/well",
            "'plate_1' has no well 'xxx",
        ),
        (
            "lh_transfer",
            with_tip(0, "reservoir:A1", HUGE + ":A1", UL),
            "/destination",
            "no labware named 'xxx",
        ),
        ("lh_pick_up_tips", {"tip_rack": HUGE, "channels": [0]}, "/tip_rack", "no tip rack named"),
        ("lh_move_plate", {"plate": HUGE, "destination": "reader"}, "/plate", "no plate named"),
        (
            "lh_move_plate",
            {"plate": "plate_1", "destination": HUGE},
            "/destination",
            "no plate site named",
        ),
        (
            "reader_read_absorbance",
            {"plate": HUGE, "wavelength": {"value": 450, "unit": "nanometer"}, "wells": []},
            "/plate",
            "no plate named",
        ),
        (
            "reader_read_absorbance",
            {"plate": "plate_1", "wavelength": {"value": 450, "unit": "nanometer"}, "wells": []},
            "/plate",
            "plate 'plate_1' is not in the reader",
        ),
    ],
)
def test_unknown_names_come_back_cut(lab, tool: str, arguments: dict, field: str, starts: str):
    before = json.dumps(lab.state(), sort_keys=True)
    result = lab.call(tool, arguments)
    assert not result.ok and result.error is not None
    error = result.error
    inside = {"lh_aspirate": "/items/0", "lh_transfer": "/transfers/0"}  # one item's argument
    assert error["field"] in (field, inside.get(tool, "") + field)
    assert error["message"].startswith(starts), error["message"]
    assert len(json.dumps(error)) < 600, len(json.dumps(error))
    assert json.dumps(lab.state(), sort_keys=True) == before  # a refusal changes nothing
