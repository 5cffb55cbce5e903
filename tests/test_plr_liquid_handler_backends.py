"""The adapter is generic over PLR backends: the chatterbox, Hamilton's STAR (firmware strings
through its chatterbox transport), a backend that refuses tips; and its configuration."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from lh_rig import rig, ul

from labtools.config import build_config
from labtools.demo.protocol import with_tip
from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.drivers.pylabrobot.plr import LiquidHandlerChatterboxBackend, STARChatterboxBackend
from labtools.simulators.deck import virtual_deck
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend
from labtools.simulators.world import World


def test_chatterbox_backend_drives_the_same_tools(capsys: pytest.CaptureFixture[str]) -> None:
    setup = rig(seed=0, backend=lambda world: LiquidHandlerChatterboxBackend(num_channels=4))
    assert setup.handler.limits.channels == 4  # from the backend
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0, 1]})
    setup.ok(
        "lh_transfer",
        with_tip(1, "reservoir:A1", "plate_1:A1", ul(100)),
    )
    setup.ok("lh_move_plate", {"plate": "plate_1", "destination": "reader"})
    deck = setup.ok("lh_get_deck", {})
    assert deck["labware"][1]["wells"] == {"A1": 100.0}
    assert setup.world.contents("plate_1:A1").volume_ul == 0  # no physics behind a chatterbox
    result = setup.call(
        "lh_aspirate", {"items": [{"channel": 4, "well": "reservoir:A1", "volume": ul(5)}]}
    )
    assert result.error["code"] == "out_of_range"
    assert "Aspirating" in capsys.readouterr().out


@pytest.fixture
def firmware() -> Iterator[list[str]]:
    """Messages PLR logs (its logger does not propagate), at every level."""
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("pylabrobot")
    handler, level = Collect(level=1), logger.level
    logger.addHandler(handler)
    logger.setLevel(1)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_star_backend_gets_firmware_commands(firmware: list[str]) -> None:
    setup = rig(seed=0, backend=lambda world: STARChatterboxBackend(), channels=8)
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
    setup.ok("lh_aspirate", {"items": [{"channel": 0, "well": "reservoir:A1", "volume": ul(100)}]})
    setup.ok("lh_dispense", {"items": [{"channel": 0, "well": "plate_1:A1", "volume": ul(100)}]})
    setup.ok("lh_drop_tips", {"channels": [0]})
    commands = [m for m in firmware if m.startswith("C0")]
    kinds = [c[:4] for c in commands]
    assert kinds.index("C0TP") < kinds.index("C0AS") < kinds.index("C0DS") < kinds.index("C0TR")
    assert any("av01000" in c for c in commands if c.startswith("C0AS"))  # 100.0 µL in 0.1 µL


class _NoBigTips(PhysicsLiquidHandlerBackend):
    def can_pick_up_tip(self, channel_idx: int, tip: Any) -> bool:
        return tip.nominal_volume <= 300


def test_a_tip_the_channel_cannot_take_is_not_supported() -> None:
    setup = rig(seed=0, backend=_NoBigTips)
    before = setup.snapshot()
    result = setup.call("lh_pick_up_tips", {"tip_rack": "tips_1000ul", "channels": [0]})
    assert result.error["code"] == "not_supported" and result.error["field"] == "/channels/0"
    assert setup.snapshot() == before


class _SetupOnlyChannels(LiquidHandlerChatterboxBackend):
    """Like STAR or EVO: the channel count is known only after setup."""

    @property
    def num_channels(self) -> int:
        raise RuntimeError("has not loaded num_channels, forgot to call `setup`?")


def test_channel_count_must_be_given_when_the_backend_learns_it_in_setup() -> None:
    deck = virtual_deck(World(0), None).deck  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="give channels"):
        PLRLiquidHandler("lh", deck, _SetupOnlyChannels())
    handler = PLRLiquidHandler("lh", deck, _SetupOnlyChannels(), channels=2)
    assert handler.limits.channels == 2


@pytest.mark.parametrize(
    "tip_types",
    [{}, {"t": [5, 1]}, {"t": [0, 300]}, {"t": [1, 2, 3]}, {"a": [1, 300], "b": [2, 300]}],
)
def test_bad_tip_types_are_refused(tip_types: dict[str, list[float]]) -> None:
    deck = virtual_deck(World(0), None).deck  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        PLRLiquidHandler("lh", deck, PhysicsLiquidHandlerBackend(World(0)), tip_types=tip_types)


def test_racks_without_a_configured_tip_type_are_not_offered() -> None:
    setup = rig(seed=0, tip_types={"tip_300ul": [1, 300]})
    assert setup.ok("lh_get_deck", {})["tips_left"] == {"tips_300ul": 96}
    assert setup.handler.limits.volume.high == 300
    result = setup.call("lh_pick_up_tips", {"tip_rack": "tips_1000ul", "channels": [0]})
    assert result.error["code"] == "unknown_resource"


def test_builds_from_a_lab_configuration() -> None:
    """The kwargs are what a TOML file gives: the tables below are ``tomllib`` output."""
    raw = {
        "seed": 4,
        "clock": "@world.clock",
        "shared": {
            "world": {
                "class": "labtools.simulators.world:World",
                "seed": "@seed",
                "stocks": [
                    {
                        "well": "reservoir:A1",
                        "species": "tartrazine",
                        "concentration_uM": 500,
                        "volume_ul": 15000,
                        "label": "tartrazine 500 µM",
                    }
                ],
            },
            "deck": {
                "class": "labtools.simulators.deck:virtual_deck",
                "world": "@world",
                "reader_backend": {
                    "class": "pylabrobot.plate_reading:PlateReaderChatterboxBackend"
                },
            },
        },
        "instruments": {
            "lh": {
                "class": "labtools.drivers.pylabrobot.liquid_handler:PLRLiquidHandler",
                "deck": "@deck.deck",
                "labels": "@world.labels",
                "backend": {
                    "class": "labtools.simulators.liquid_handling:PhysicsLiquidHandlerBackend",
                    "world": "@world",
                    "num_channels": 8,
                },
                "tip_types": {"tip_300ul": [1, 300, 10], "tip_1000ul": [10, 1000]},
            }
        },
    }
    config = build_config(raw)
    handler = config.instruments["lh"]
    assert isinstance(handler, PLRLiquidHandler) and handler.limits.channels == 8
    assert handler.labels == {"reservoir:A1": "tartrazine 500 µM"}
    assert config.clock is config.shared["world"].clock


@pytest.mark.parametrize("kind", ["aspirate", "dispense"])
def test_the_physics_backend_moves_all_channels_or_none(kind: str) -> None:
    """A call the physics backend refuses for one channel (here a flow rate of 0 on the second)
    moves no channel: the world, its clock and its noise stay as they were, and PLR, told of the
    failure, rolls its trackers back."""
    setup = rig(seed=2)
    setup.ok("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0, 1]})
    items = [{"channel": ch, "well": "reservoir:A1", "volume": ul(50)} for ch in (0, 1)]
    setup.ok("lh_aspirate", {"items": items})
    before = setup.snapshot()
    wells = [setup.well("plate_1:A1"), setup.well("plate_1:B1")]
    call = setup.handler.plr.aspirate if kind == "aspirate" else setup.handler.plr.dispense
    with pytest.raises(ValueError, match="flow rate must be positive"):
        setup.lab.run(
            call(
                wells if kind == "dispense" else [setup.well("reservoir:A1")] * 2,
                vols=[20.0, 20.0],
                use_channels=[0, 1],
                flow_rates=[None, 0.0],
            )
        )
    assert setup.snapshot() == before
