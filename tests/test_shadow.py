"""Shadow runs: each call that moves anything runs on a simulated twin first, from the real lab's
belief; what the twin refuses never reaches the instrument."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from labtools import Lab
from labtools.errors import Interlock
from labtools.shadow import SHADOW_MARK, ShadowRefusal, moves, shadow_error

STAR = Path(__file__).parent.parent / "docs" / "examples" / "star_dry_run.toml"


def volume(ul: float) -> dict[str, object]:
    return {"value": ul, "unit": "microliter"}


def aspirate(well: str, ul: float, channel: int = 0) -> dict[str, object]:
    return {"items": [{"channel": channel, "well": well, "volume": volume(ul)}]}


def transfer(source: str, destination: str, ul: float) -> dict[str, object]:
    return {
        "transfers": [{"source": source, "destination": destination, "volume": volume(ul)}],
        "tip_rack": "",
        "tips": "mounted",
        "channels": [0],
        "mix_cycles": 0,
        "mix_volume": volume(0),
    }


class Firmware:
    """The STAR chatterbox's firmware strings (PLR logs them at level 5, not propagated)."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog

    def since(self, mark: int) -> list[str]:
        return [r.getMessage() for r in self.caplog.records[mark:] if "C0" in r.getMessage()]

    def mark(self) -> int:
        return len(self.caplog.records)


@pytest.fixture
def firmware(caplog: pytest.LogCaptureFixture) -> Iterator[Firmware]:
    plr_log = logging.getLogger("pylabrobot")
    plr_log.addHandler(caplog.handler)
    try:
        with caplog.at_level(5, logger="pylabrobot"):
            yield Firmware(caplog)
    finally:
        plr_log.removeHandler(caplog.handler)


@pytest.fixture(scope="module")
def star() -> Iterator[Lab]:
    with Lab.load(STAR, shadow=True) as lab:
        yield lab


class Spy:
    """Counts calls of one instrument method (the real one, behind the shadow)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, instrument: object, method: str) -> None:
        self.calls = 0
        real = getattr(instrument, method)

        async def counted(*args: object, **kwargs: object) -> object:
            self.calls += 1
            return await real(*args, **kwargs)

        monkeypatch.setattr(instrument, method, counted)


def test_the_twin_has_the_same_deck_physics_backends_and_declared_contents(star: Lab) -> None:
    assert star.shadow is not None
    twin = star.shadow.twin
    assert star.shadow.shadowed == ["lh", "reader"]
    real_lh, twin_lh = star.instruments["lh"], twin.instruments["lh"]
    assert type(real_lh.plr.backend).__name__ == "STARChatterboxBackend"
    assert type(twin_lh.plr.backend).__name__ == "PhysicsLiquidHandlerBackend"
    assert type(twin.instruments["reader"].reader.backend).__name__ == "PhysicsPlateReaderBackend"
    assert twin_lh.plr.deck is not real_lh.plr.deck
    assert twin.state()["lh"]["labware"] == star.state()["lh"]["labware"]
    world = twin.shared["twin_world"]
    stock = world.peek("reservoir:A2")  # "tartrazine 500 µM ±1 %", 10 mL as declared
    assert stock.volume_ul == 10000.0
    assert stock.concentration("tartrazine") == pytest.approx(500e-6)
    assert world.labels["reservoir:A1"] == "water"
    assert twin.clock is not None and twin.clock is world.clock


def test_star_an_overdraw_is_refused_by_the_twin_and_no_firmware_command_is_generated(
    star: Lab, firmware: Firmware, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert star.shadow is not None
    spy = Spy(monkeypatch, star.instruments["lh"], "aspirate")
    mark = firmware.mark()
    star.lh.pick_up_tips("tips_300ul", [1])
    assert any(c.startswith("C0TP") for c in firmware.since(mark))  # a valid call goes through

    mark = firmware.mark()
    refused = star.call("lh_aspirate", aspirate("plate_2:A1", 50, channel=1))  # an empty well
    assert not refused.ok and refused.error is not None
    assert refused.error["shadow"] is True and refused.error["code"] == "interlock"
    assert "overdraw" in refused.error["message"]
    assert refused.error["field"] == "/items/0/volume"
    assert firmware.since(mark) == []  # no C0AS, nor any other firmware command
    assert spy.calls == 0  # the STAR adapter itself was never called
    event = star.journal.events()[-1]
    assert event["tool"] == "lh_aspirate" and event["error"]["shadow"] is True

    # the twin's own error, word for word, apart from the mark (a field, and the message's
    # opening words, so the text a model reads says where the refusal came from)
    twin = star.shadow.twin.call("lh_aspirate", aspirate("plate_2:A1", 50, channel=1))
    assert twin.error is not None
    assert refused.error == {
        **twin.error,
        "message": SHADOW_MARK + twin.error["message"],
        "shadow": True,
    }

    mark = firmware.mark()
    ok = star.call("lh_aspirate", aspirate("reservoir:A1", 100, channel=1))
    assert ok.ok, ok.error
    commands = firmware.since(mark)
    assert any(c.startswith("C0AS") for c in commands) and "av01000" in " ".join(commands)
    assert spy.calls == 1
    star.lh.dispense([{"channel": 1, "well": "reservoir:A1", "volume": "100 uL"}])
    star.lh.drop_tips([1])


def test_star_a_plan_that_would_overdraw_stops_before_the_hardware(
    star: Lab, firmware: Firmware
) -> None:
    """A batch of transfers whose sum exceeds the source: every aspirate of it is held back."""
    star.lh.pick_up_tips("tips_300ul", [0])
    star.lh.transfer(
        [{"source": "reservoir:A2", "destination": "plate_1:B1", "volume": "200 uL"}],
        "",
        "mounted",
        [0],
    )
    mark = firmware.mark()
    # plate_1:B1 holds 200 µL; three draws of 80 µL would take 240
    plan = [transfer("plate_1:B1", f"plate_1:C{n}", 80) for n in (1, 2, 3)]
    results = [star.call("lh_transfer", args) for args in plan]
    assert [r.ok for r in results] == [True, True, False]
    assert results[2].error is not None and results[2].error["shadow"] is True
    aspirations = [c for c in firmware.since(mark) if c.startswith("C0AS")]
    assert len(aspirations) == 2  # the first two only
    star.lh.drop_tips([0])


def test_refusals_the_twin_finds(star: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """Missing tip, overfill, a plate in the reader, a taken site: refused, the STAR untouched."""
    for method in ("aspirate", "dispense", "move_plate"):
        Spy(monkeypatch, star.instruments["lh"], method)
    no_tip = star.call("lh_aspirate", aspirate("reservoir:A1", 10, channel=5))
    assert no_tip.error is not None and no_tip.error["code"] == "precondition_failed"
    taken = star.call("lh_move_plate", {"plate": "plate_1", "destination": "plate_carrier-2"})
    assert taken.error is not None and taken.error["code"] == "interlock"
    for result in (no_tip, taken):
        assert result.error is not None and result.error["shadow"] is True


def test_read_only_calls_do_not_run_on_the_twin(star: Lab) -> None:
    assert star.shadow is not None
    twin = star.shadow.twin
    assert not moves(star.tool_spec("lh_get_deck"))
    assert moves(star.tool_spec("lh_move_plate"))
    count = twin.journal.count
    star.lh.get_deck()
    assert twin.journal.count == count


@pytest.fixture
def virtual() -> Iterator[Lab]:
    with Lab.virtual(seed=3, shadow=True) as lab:
        yield lab


def test_a_virtual_lab_as_the_real_one(virtual: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    assert virtual.shadow is not None
    assert virtual.shadow.shadowed == ["lh", "reader"]  # the spectrometer's calls go straight
    world = virtual.shared["world"]
    spy = Spy(monkeypatch, virtual.instruments["lh"], "dispense")
    virtual.lh.pick_up_tips("tips_300ul", [0])
    virtual.lh.aspirate([{"channel": 0, "well": "reservoir:A2", "volume": "300 uL"}])
    virtual.lh.dispense([{"channel": 0, "well": "plate_1:A1", "volume": "300 uL"}])
    virtual.lh.aspirate([{"channel": 0, "well": "reservoir:A2", "volume": "100 uL"}])
    before = world.peek("plate_1:A1").volume_ul
    overfill = virtual.call(
        "lh_dispense", {"items": [{"channel": 0, "well": "plate_1:A1", "volume": volume(100)}]}
    )
    assert overfill.error is not None and overfill.error["shadow"] is True
    assert "overfill" in overfill.error["message"]
    assert spy.calls == 1 and world.peek("plate_1:A1").volume_ul == before
    spec = virtual.call("spec_set_integration_time", {"time": {"value": 20, "unit": "millisecond"}})
    assert spec.ok


def test_the_twin_follows_the_real_belief(virtual: Lab) -> None:
    """After calls, an operator's refill and a rewind, the twin believes what the lab does."""
    assert virtual.shadow is not None
    shadow, twin = virtual.shadow, virtual.shadow.twin
    start = virtual.checkpoint()
    virtual.lh.pick_up_tips("tips_300ul", [0, 1])
    virtual.lh.transfer(
        [
            {"source": "reservoir:A3", "destination": f"plate_1:A{n}", "volume": "40 uL"}
            for n in (1, 2)
        ],
        "",
        "mounted",
        [0, 1],
    )
    virtual.lh.aspirate([{"channel": 1, "well": "reservoir:A4", "volume": "25 uL"}])
    virtual.lh.move_plate("plate_2", "reader")
    assert twin.state()["lh"] == virtual.state()["lh"]

    # a change the twin did not see: the real belief of reservoir:A2 set to 60 µL
    reservoir = virtual.instruments["lh"].plr.deck.get_resource("reservoir")
    reservoir.get_item("A2").tracker.set_volume(60.0)
    refused = virtual.call("lh_aspirate", aspirate("reservoir:A2", 100))
    assert refused.error is not None and refused.error["shadow"] is True
    assert "60 µL" in refused.error["message"]
    assert twin.state()["lh"] == virtual.state()["lh"]

    virtual.rewind(start)  # tips back in the rack, plate_2 back on its carrier
    shadow.sync()
    assert twin.state()["lh"] == virtual.state()["lh"]
    assert twin.instruments["reader"].state() == virtual.instruments["reader"].state()
    assert virtual.lh.pick_up_tips("tips_300ul", [0])["tips"][0]["tip"] == "tips_300ul:A1"


def test_a_refusal_is_a_typed_error_of_the_twins_code() -> None:
    error = {"code": "interlock", "message": "m", "field": "/items/0/volume", "hint": "h"}
    refusal = shadow_error(error)
    assert isinstance(refusal, Interlock) and isinstance(refusal, ShadowRefusal)
    assert refusal.to_dict() == {**error, "message": SHADOW_MARK + "m", "shadow": True}
    assert str(refusal).startswith("refused by the shadow twin (the instrument was not called)")
    assert type(shadow_error(error)) is type(refusal)  # one class per code


def test_labtools_serve_shadow_refuses_over_mcp_with_the_mark() -> None:
    import anyio
    from mcp import Client
    from mcp_helpers import refusal, stdio_server

    async def main() -> None:
        async with Client(stdio_server("--shadow", lab=STAR)) as client:
            picked = await client.call_tool(
                "lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]}
            )
            assert not picked.is_error
            refused = await client.call_tool("lh_aspirate", aspirate("plate_1:A1", 50))
            error = refusal(refused)
            assert error["shadow"] is True and error["code"] == "interlock"
            text = refused.content[0].text  # what the model reads
            assert text.startswith(f"interlock: {SHADOW_MARK}")
            drawn = await client.call_tool("lh_aspirate", aspirate("reservoir:A1", 50))
            assert not drawn.is_error

    anyio.run(main)


def test_a_twin_keeps_what_can_be_simulated_and_nothing_that_could_connect(
    tmp_path: Path,
) -> None:
    """A generic chatterbox becomes physics with its channels; an instrument of no known
    simulation is left out, with the shared table only it used (never built)."""
    lab_file = tmp_path / "lab.toml"
    lab_file.write_text(
        """
[shared.port]
class = "does.not.exist:SerialPort"   # only the spectrometer uses it: never built

[shared.deck]
class = "labtools.simulators.deck:build_deck"

[instruments.lh]
class = "labtools.drivers.pylabrobot.liquid_handler:PLRLiquidHandler"
deck = "@deck"
labels = { "reservoir:A3" = "sunset yellow 250 µM", "reservoir:A4" = "buffer pH 7" }
volumes = { "reservoir:A3" = 5000, "reservoir:A4" = 2000 }
[instruments.lh.backend]
class = "pylabrobot.liquid_handling.backends:LiquidHandlerChatterboxBackend"
num_channels = 4

[instruments.spec]
class = "fakes:FakeSpectrometer"
""",
        encoding="utf-8",
    )
    from labtools.shadow import twin_config

    config = twin_config(lab_file)
    assert list(config.instruments) == ["lh"] and "port" not in config.shared
    lh = config.instruments["lh"]
    assert type(lh.plr.backend).__name__ == "PhysicsLiquidHandlerBackend"
    assert lh.plr.backend.num_channels == 4 and lh.limits.channels == 4
    world = config.shared["twin_world"]
    assert world.peek("reservoir:A3").concentration("sunset_yellow") == pytest.approx(250e-6)
    assert world.peek("reservoir:A4").concentrations() == {}  # not a species: water
    assert config.clock is world.clock


def test_rewind_is_refused_on_a_dry_run_and_the_twin_refuses_a_discarded_tip(
    firmware: Firmware,
) -> None:
    """The STAR dry run stands for hardware: checkpoint and rewind are refused with
    ``not_supported`` and change nothing, so after C0TR (the tip discarded) the twin, mirrored
    from the belief, refuses the aspirate and no C0AS is generated."""
    from labtools.errors import NotSupported

    with Lab.load(STAR, shadow=True) as lab:
        assert lab.instruments["lh"].dry_run and lab.instruments["reader"].dry_run
        lab.lh.pick_up_tips("tips_300ul", [0])
        before = lab.state()
        with pytest.raises(NotSupported, match="lh, reader") as refused:
            lab.checkpoint()
        assert refused.value.code == "not_supported" and refused.value.hint
        snapshot = {"lh": lab.instruments["lh"].snapshot(), "reader": None}
        with pytest.raises(NotSupported):
            lab.rewind(snapshot)
        assert lab.state() == before  # nothing put back

        mark = firmware.mark()
        lab.lh.drop_tips([0])
        assert any(c.startswith("C0TR") for c in firmware.since(mark))

        # the belief changed outside the twin's view: the driver's own restore, the tip back
        lab.instruments["lh"].restore(snapshot["lh"])
        assert lab.state()["lh"]["channels"][0]["tip"] == "tips_300ul:A1"
        lab.instruments["lh"].plr.head[0].remove_tip()  # and gone again, as on the STAR
        mark = firmware.mark()
        aspirated = lab.call("lh_aspirate", aspirate("reservoir:A1", 50))
        assert aspirated.error is not None and aspirated.error["shadow"] is True
        assert "no tip" in aspirated.error["message"]
        assert firmware.since(mark) == []  # no C0AS


def test_the_twin_re_mirrors_after_every_change_of_the_belief(virtual: Lab) -> None:
    """Changes the twin did not see, one after another — a rewind, a driver's restore, a call
    made on the driver directly — are each what the twin believes at the next call."""
    assert virtual.shadow is not None
    twin = virtual.shadow.twin
    lh = virtual.instruments["lh"]
    start = virtual.checkpoint()
    virtual.lh.pick_up_tips("tips_300ul", [0])
    mounted = lh.snapshot()
    virtual.lh.drop_tips([0])
    for change in (
        lambda: virtual.rewind(start),  # no tip
        lambda: lh.restore(mounted),  # a tip on channel 0
        lambda: virtual.run(lh.drop_tips([0])),  # dropped, bypassing the lab
        lambda: lh.restore(mounted),
    ):
        change()
        has_tip = virtual.state()["lh"]["channels"][0]["tip"] is not None
        result = virtual.call("lh_aspirate", aspirate("reservoir:A1", 20))
        assert result.ok is has_tip, result.error
        if not has_tip:
            assert result.error is not None and result.error["shadow"] is True
        assert twin.state()["lh"] == virtual.state()["lh"]
        if has_tip:
            virtual.lh.dispense([{"channel": 0, "well": "reservoir:A1", "volume": "20 uL"}])
