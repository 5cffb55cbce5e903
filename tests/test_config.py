"""Lab configuration files: classes by import path, shared objects, references, overrides."""

from __future__ import annotations

import pytest

from labtools import Lab
from labtools.config import ConfigError, build_config, import_object, load_config


def test_the_fake_lab_loads_from_toml_with_an_instrument_reference(tmp_path) -> None:
    from mcp_helpers import FAKE_LAB

    with Lab.load(FAKE_LAB) as lab:
        assert lab.tool_names()[0] == "lh_pick_up_tips"
        assert lab.instruments["reader"].lh is lab.instruments["lh"]


def test_overrides_replace_top_level_values_only() -> None:
    raw = {"seed": 0, "instruments": {"spec": {"class": "fakes:FakeSpectrometer"}}}
    assert build_config(raw, seed=3).instruments["spec"].name == "spec"
    with pytest.raises(ConfigError, match="no top-level setting"):
        build_config(raw, speed=3)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "names no instruments"),
        ({"instruments": {"x": {"nope": 1}}}, "needs a 'class'"),
        ({"instruments": {"x": {"class": "no_such_module:Thing"}}}, "cannot import"),
        ({"instruments": {"x": {"class": "fakes:NoSuchClass"}}}, "has no 'NoSuchClass'"),
        ({"instruments": {"x": {"class": "fakes"}}}, "is not 'module:name'"),
        (
            {"instruments": {"x": {"class": "fakes:FakeSpectrometer", "colour": 1}}},
            "unexpected keyword",
        ),
        (
            {"instruments": {"x": {"class": "fakes:FakePlateReader", "lh": "@later"}}},
            "names nothing defined before it",
        ),
    ],
)
def test_configuration_errors_say_what_is_wrong(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(raw)


def test_the_virtual_lab_config_builds_a_world_shared_by_all_instruments() -> None:
    from importlib import resources

    with resources.as_file(resources.files("labtools.simulators") / "virtual_lab.toml") as path:
        config = load_config(path, seed=4)
    world = config.shared["world"]
    assert world.seed == 4 and config.clock is world.clock
    assert set(config.instruments) == {"lh", "reader", "spec"}
    assert import_object("labtools.lab:Lab") is Lab
