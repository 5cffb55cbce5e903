"""Every result the virtual lab returns matches the tool's exported output schema.

MCP clients validate structuredContent against outputSchema and refuse a mismatch, so this is a
contract, not a nicety.
"""

from __future__ import annotations

import jsonschema

from labtools import Lab
from labtools.demo.protocol import DyeQuantification

NM = "nanometer"


def test_every_result_of_a_whole_experiment_matches_its_output_schema() -> None:
    with Lab.virtual(seed=2) as lab:
        DyeQuantification(lab, echo=lambda line: None).run()
        extra = [
            (
                "reader_read_fluorescence",
                {
                    "gain": 0,
                    "focal_height": {"value": 0, "unit": "millimeter"},
                    "plate": "plate_1",
                    "wells": ["A1", "H12"],
                    "excitation_wavelength": {"value": 485, "unit": NM},
                    "emission_wavelength": {"value": 528, "unit": NM},
                },
            ),
            ("reader_read_luminescence", {"plate": "plate_1", "wells": []}),
            ("reader_get_temperature", {}),
            (
                "reader_set_temperature",
                {"temperature": {"value": 37, "unit": "degree_Celsius"}, "wait": True},
            ),
            ("reader_get_temperature", {}),
            ("reader_stop_heating", {}),
            (
                "reader_read_absorbance_spectrum",
                {
                    "plate": "plate_1",
                    "wells": [],
                    "start": {"value": 400, "unit": NM},
                    "stop": {"value": 700, "unit": NM},
                    "step": {"value": 10, "unit": NM},
                },
            ),
            (
                "reader_read_absorbance_kinetic",
                {
                    "plate": "plate_1",
                    "wells": ["A1", "H12"],
                    "wavelength": {"value": 405, "unit": NM},
                    "interval": {"value": 5, "unit": "second"},
                    "reads": 3,
                },
            ),
            ("lh_move_plate", {"plate": "plate_1", "destination": "plate_carrier-1"}),
            ("spec_acquire_spectrum", {"scans": 3}),
            ("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [1]}),
            (
                "lh_aspirate",
                {
                    "items": [
                        {
                            "channel": 1,
                            "well": "reservoir:A1",
                            "volume": {"value": 50, "unit": "microliter"},
                        }
                    ]
                },
            ),
            (
                "lh_dispense",
                {
                    "items": [
                        {
                            "channel": 1,
                            "well": "plate_2:A1",
                            "volume": {"value": 50, "unit": "microliter"},
                        }
                    ]
                },
            ),
        ]
        extra += [
            ("balance_get_info", {}),
            ("balance_zero", {"mode": "stable"}),
            ("balance_tare", {"mode": "immediate"}),
            ("balance_weigh", {"mode": "stable"}),
        ]
        for name, arguments in extra:
            assert lab.call(name, arguments).ok, name
        newest = lab.instruments["spec"].data.handles()[-1]
        window = {"start": {"value": 500, "unit": NM}, "stop": {"value": 520, "unit": NM}}
        assert lab.call("spec_get_data", {"data": newest, **window}).ok
        kept = lab.instruments["reader"].data.handles()[-1]
        window = {"data": kept, "wells": [], "first": 0, "points": 1}
        assert lab.call("reader_get_data", window).ok
        events = lab.journal.events()
        seen = set()
        for event in events:
            assert event["ok"], event
            schema = lab.tool_spec(event["tool"]).output_schema
            jsonschema.validate(event["data"], schema)
            seen.add(event["tool"])
    assert seen == set(lab.tool_names())
