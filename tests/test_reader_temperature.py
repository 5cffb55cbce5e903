"""reader_set_temperature / reader_get_temperature: the incubator on the virtual clock, its
limits, real PLR backends' temperature control, and enzymes in a heated plate.

Expected temperatures are first-order lags computed here from the time constants of
``simulators/data/plate_reader.toml`` (the chamber's air towards its setpoint, the plate towards
the air); expected rates from the Arrhenius law with the seed's drawn activation energy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from reader_rig import deck_rig, nm, read, rig
from test_plr_plate_reader_backends import FakeM5, _lab

from labtools.drivers.pylabrobot.plate_reader import limits_for
from labtools.drivers.pylabrobot.plr import (
    CytationBackend,
    PlateReaderBackend,
    PlateReaderChatterboxBackend,
)
from labtools.simulators.plate_reading.params import reader_data

ALP = "alkaline_phosphatase"
HEAT = reader_data()["incubation"]
TAU_AIR, TAU_PLATE = float(HEAT["chamber_tau_s"]), float(HEAT["plate_tau_s"])
ROOM = 25.0


def _celsius(value: float) -> dict[str, Any]:
    return {"value": value, "unit": "degree_Celsius"}


def _set(lab: Any, celsius: float, wait: bool = False) -> Any:
    return lab.call("reader_set_temperature", {"temperature": _celsius(celsius), "wait": wait})


def _air(start: float, target: float, t: float) -> float:
    return target + (start - target) * math.exp(-t / TAU_AIR)


def _plate(start: float, air0: float, target: float, t: float) -> float:
    """A plate following air that follows ``target``: dP/dt = (C − P)/τp, dC/dt = (S − C)/τc,
    integrated here by 20,000 RK4 steps."""
    p, c, h = start, air0, t / 20_000

    def f(p: float, c: float) -> tuple[float, float]:
        return (c - p) / TAU_PLATE, (target - c) / TAU_AIR

    for _ in range(20_000):
        k1 = f(p, c)
        k2 = f(p + h / 2 * k1[0], c + h / 2 * k1[1])
        k3 = f(p + h / 2 * k2[0], c + h / 2 * k2[1])
        k4 = f(p + h * k3[0], c + h * k3[1])
        p += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        c += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return p


def test_the_idle_reader_reads_the_room_and_has_no_setpoint() -> None:
    setup = rig(seed=1)
    lab = setup.lab()
    result = lab.call("reader_get_temperature", {})
    assert result.ok, result.error
    offset = setup.backend.truth.sensor_offset_c
    assert abs(offset) <= 0.2
    assert result.data == {
        "temperature": round(ROOM + offset, 2),
        "setpoint": None,
        "unit": "degree_Celsius",
    }
    assert setup.world.temperature("plate_1:A1") == ROOM


@pytest.mark.parametrize("celsius", [60.0, 28.9, 4.0])
def test_a_setpoint_out_of_range_is_refused_and_nothing_changes(celsius: float) -> None:
    setup = rig(seed=2)
    lab = setup.lab()
    assert _set(lab, 37.0).ok
    setup.world.clock.advance(60.0)
    before = (setup.backend.chamber.setpoint_c, setup.world.clock.now(), lab.state())
    result = _set(lab, celsius, wait=True)
    assert not result.ok
    assert result.error["code"] == "out_of_range" and result.error["field"] == "/temperature"
    assert "29–50 degree_Celsius" in result.error["hint"]
    assert (setup.backend.chamber.setpoint_c, setup.world.clock.now(), lab.state()) == before


def test_kelvin_setpoints_are_converted() -> None:
    setup = rig(seed=2)
    lab = setup.lab()
    result = lab.call(
        "reader_set_temperature",
        {"temperature": {"value": 310.15, "unit": "kelvin"}, "wait": False},
    )
    assert result.ok, result.error
    assert result.data["setpoint"] == 37.0


def test_chamber_and_plate_follow_their_time_constants_on_the_virtual_clock() -> None:
    """Setting returns at once; then the air approaches the setpoint with τ_c and the plate
    inside follows the air with τ_p; the plate outside the reader stays at the room's 25 °C."""
    setup, outside = deck_rig(seed=3)
    lab = setup.lab()
    world = setup.world
    offset = setup.backend.truth.sensor_offset_c
    held = 37.0 - offset  # the controller holds its sensor at the setpoint
    start = world.clock.now()
    result = _set(lab, 37.0)
    assert result.ok, result.error
    assert world.clock.now() == start and result.data["waited"] == 0.0
    assert result.data["stable"] is False
    elapsed = 0.0
    for step in (30.0, 90.0, 240.0, 600.0, 1200.0):
        world.clock.advance(step)
        elapsed += step
        air = setup.backend.chamber.air_c
        assert air == pytest.approx(_air(ROOM, held, elapsed), abs=2e-3)
        plate = world.temperature("plate_1:H12")
        assert plate == pytest.approx(_plate(ROOM, ROOM, held, elapsed), abs=2e-3)
        assert world.temperature(f"{outside.name}:A1") == ROOM
        reading = lab.call("reader_get_temperature", {}).data
        assert reading["temperature"] == pytest.approx(air + offset, abs=0.006)
        assert reading["setpoint"] == 37.0
    # within an hour more the plate sits at the held temperature, exactly
    world.clock.advance(3600.0)
    assert world.temperature("plate_1:A1") == held


def test_waiting_lets_time_pass_until_the_chamber_holds_the_setpoint() -> None:
    """wait: the call returns once the sensor reads within ±0.2 °C (the Synergy HTX's
    stability at 37 °C): after τ_c·ln(ΔT/0.2), read every 10 s."""
    setup = rig(seed=4)
    lab = setup.lab()
    offset = setup.backend.truth.sensor_offset_c
    result = _set(lab, 45.0, wait=True)
    assert result.ok, result.error
    data = result.data
    assert data["stable"] is True and abs(data["temperature"] - 45.0) <= 0.2 + 1e-9
    expected = TAU_AIR * math.log((45.0 - offset - ROOM) / 0.2)
    assert expected <= data["waited"] < expected + 10.0
    assert data["waited_unit"] == "second" and setup.world.clock.now() == data["waited"]
    # the plate lags behind the air
    assert setup.world.temperature("plate_1:A1") < 45.0 - offset - 1.0


def test_a_plate_taken_out_cools_to_the_room() -> None:
    setup, _ = deck_rig(seed=5)
    lab = setup.lab()
    assert _set(lab, 40.0, wait=True).ok
    setup.world.clock.advance(3000.0)
    warm = setup.world.temperature("plate_1:A1")
    assert warm == pytest.approx(40.0 - setup.backend.truth.sensor_offset_c, abs=1e-3)
    setup.reader.unassign_child_resource(setup.plate)
    setup.world.clock.advance(TAU_PLATE)
    assert setup.world.temperature("plate_1:A1") == pytest.approx(
        ROOM + (warm - ROOM) / math.e, abs=1e-3
    )


def test_switching_the_heater_off_lets_chamber_and_plate_cool_to_the_room() -> None:
    """Off: no setpoint; the air falls back to the room with τ_c and the plate follows it
    with τ_p, from where they were; an hour later both sit at the room's temperature."""
    setup = rig(seed=13)
    lab = setup.lab()
    assert _set(lab, 40.0, wait=True).ok
    setup.world.clock.advance(3600.0)
    air0, plate0 = setup.backend.chamber.air_c, setup.world.temperature("plate_1:A1")
    start = setup.world.clock.now()
    off = lab.call("reader_stop_heating", {})
    assert off.ok, off.error
    assert off.data["setpoint"] is None and setup.world.clock.now() == start  # at once
    for elapsed in (120.0, 600.0):
        setup.world.clock.advance(elapsed - (setup.world.clock.now() - start))
        assert setup.backend.chamber.air_c == pytest.approx(_air(air0, ROOM, elapsed), abs=2e-3)
        plate = setup.world.temperature("plate_1:A1")
        assert plate == pytest.approx(_plate(plate0, air0, ROOM, elapsed), abs=2e-3)
        assert lab.call("reader_get_temperature", {}).data["setpoint"] is None
    setup.world.clock.advance(3600.0)
    assert setup.world.temperature("plate_1:A1") == ROOM


def test_a_reset_world_switches_the_heater_off() -> None:
    setup = rig(seed=6)
    lab = setup.lab()
    assert _set(lab, 42.0, wait=True).ok
    setup.world.reset(6)
    assert setup.backend.chamber.setpoint_c is None
    assert setup.backend.chamber.air_c == ROOM and setup.world.temperature("plate_1:A1") == ROOM
    assert lab.call("reader_get_temperature", {}).data["setpoint"] is None


def _assay(seed: int, celsius: float | None) -> tuple[float, dict[str, Any], Any]:
    """Pre-warm the plate at ``celsius`` (``None``: the room), then start an ALP reaction in A1
    and read it for 5 minutes: the slope (OD/min), the reads and the rig."""
    setup = rig(seed=seed)
    lab = setup.lab()
    if celsius is not None:
        assert _set(lab, celsius, wait=True).ok
        setup.world.clock.advance(3600.0)  # the plate follows the chamber
    truth = setup.world.kinetics.at_work(ALP)
    setup.fill("A1", 200.0, pnpp=20 * truth["km_molar"], alkaline_phosphatase=2e-10)
    setup.fill("A2", 200.0, buffer_ph10=0.02)
    result = lab.call(
        "reader_read_absorbance_kinetic",
        {
            "plate": "plate_1",
            "wells": ["A1", "A2"],
            "wavelength": nm(405),
            "interval": {"value": 30, "unit": "second"},
            "reads": 11,
        },
    )
    assert result.ok, result.error
    return result.data["slopes"]["A1"], result.data, setup


def test_enzymes_run_faster_in_a_heated_plate_by_the_arrhenius_factor() -> None:
    """Initial slopes at a 37 °C setpoint over those at the room: kcat's Arrhenius factor at
    the plate's real temperature (setpoint less the sensor's offset), with Km's change at 20 Km
    of substrate taken into account."""
    room, _, _ = _assay(7, None)
    warm, _, setup = _assay(7, 37.0)
    kinetics = setup.world.kinetics
    thermal = kinetics.thermal(ALP)
    plate_c = 37.0 - setup.backend.truth.sensor_offset_c
    x = 1 / (plate_c + 273.15) - 1 / 298.15
    kcat_factor = math.exp(-thermal["kcat_ea"] / 8.314462618 * x)
    km_factor = thermal["km_ratio_37"] ** (x / (1 / 310.15 - 1 / 298.15))
    saturation = (1 / (1 + 1 / 20)) / (1 / (1 + km_factor / 20))
    expected = kcat_factor / saturation
    assert warm / room == pytest.approx(expected, rel=0.02)
    assert 1.5 < warm / room < 1.8


#: water's 1 cm k-factor (A975 − A900) by temperature (°C) [V: Lampinen et al. 2012, Thermo
#: Scientific application note ANMR_MUGO_0412, fig. 6, as tabulated in the fpcountr package]
WATER_K = {25: 0.172, 28: 0.174, 31: 0.177, 34: 0.179, 37: 0.183, 41: 0.188, 45: 0.191}


@pytest.mark.parametrize("setpoint", [37.0, 45.0])
def test_water_absorbs_more_in_a_warm_plate_as_published(setpoint: float) -> None:
    """A PathCheck read of the same 200 µL of water, warmed: A977 − A900 grows by water's
    k-factor at the plate's temperature over that at 25 °C (1.064 at 37 °C), so a path taken
    with the 25 °C k-factor comes out that much long."""
    setup = rig(seed=12)
    wells = [f"{row}{column}" for row in "ABCDEFGH" for column in (1, 2)]
    for well in wells:
        setup.fill(well, 200.0)
    lab = setup.lab()

    def band() -> float:
        a977, a900 = read(lab, 977, wells), read(lab, 900, wells)
        return float(np.mean([a977[w] - a900[w] for w in wells]))

    cold = band()
    assert _set(lab, setpoint, wait=True).ok
    setup.world.clock.advance(3600.0)  # the plate follows the chamber
    plate_c = setpoint - setup.backend.truth.sensor_offset_c
    published = np.interp(plate_c, list(WATER_K), list(WATER_K.values())) / WATER_K[25]
    assert band() / cold == pytest.approx(published, abs=0.01)


def test_same_seed_same_heated_run() -> None:
    _, first, _ = _assay(8, 42.0)
    _, second, _ = _assay(8, 42.0)
    assert first == second


def test_the_temperature_optimum_can_be_found_in_the_reader() -> None:
    """Slopes of the same reaction, pre-warmed at 30–50 °C and read for 30 minutes: they rise
    with temperature to 45 °C; at 50 °C the enzyme unfolds within the read (the slope of its
    last reads falls below its first)."""
    slopes = {}
    for celsius in (30.0, 40.0, 45.0, 50.0):
        setup = rig(seed=9)
        lab = setup.lab()
        assert _set(lab, celsius, wait=True).ok
        setup.world.clock.advance(3600.0)
        km = setup.world.kinetics.at_work(ALP)["km_molar"]
        setup.fill("A1", 200.0, pnpp=20 * km, alkaline_phosphatase=5e-10)
        result = lab.call(
            "reader_read_absorbance_kinetic",
            {
                "plate": "plate_1",
                "wells": ["A1"],
                "wavelength": nm(405),
                "interval": {"value": 60, "unit": "second"},
                "reads": 31,
            },
        )
        assert result.ok, result.error
        od = np.array(result.data["values"]["A1"])
        slopes[celsius] = (od[5] - od[0], od[30] - od[25])
    first = [slopes[c][0] for c in (30.0, 40.0, 45.0)]
    assert first == sorted(first)
    early, late = slopes[50.0]
    assert late < 0.8 * early  # unfolding at 50 °C within half an hour
    early45, late45 = slopes[45.0]
    assert late / early < late45 / early45


# -- real backends --------------------------------------------------------------------------
class FakeCytation(CytationBackend):
    """PLR's Cytation backend with its serial exchange replaced: it records commands and
    answers the temperature query ``h`` with ``reply`` (°C × 100000, framed)."""

    def __init__(self) -> None:
        PlateReaderBackend.__init__(self)
        self.sent: list[tuple[str, str | None]] = []
        self.celsius = 25.0

    async def setup(self) -> None: ...
    async def stop(self) -> None: ...

    async def send_command(
        self,
        command: str,
        parameter: str | None = None,
        wait_for_response: bool = True,
        timeout: float | None = None,
    ) -> bytes:
        self.sent.append((command, parameter))
        return b"\x02" + str(int(self.celsius * 100000)).encode() + b"\x03"


class TempM5(FakeM5):
    """A SpectraMax M5 whose ``!TEMP`` query answers setpoint 37.0, current 36.4."""

    async def send_command(
        self, command: str, timeout: int = 60, num_res_fields: Any = None
    ) -> list[str]:
        self.commands.append(command)
        return ["OK", "37.0 36.4"] if command == "!TEMP" else ["OK"]


def test_a_cytation_is_sent_plrs_temperature_commands() -> None:
    backend = FakeCytation()
    assert (limits_for(backend).temperature.low, limits_for(backend).temperature.high) == (4, 45)
    lab = _lab(backend)
    result = _set(lab, 37.0)
    assert result.ok, result.error
    assert ("g", "37000") in backend.sent  # PLR's BioTek set_temperature
    backend.celsius = 36.9
    reading = lab.call("reader_get_temperature", {})
    assert reading.data == {"temperature": 36.9, "setpoint": 37.0, "unit": "degree_Celsius"}
    assert not _set(lab, 46.0).ok  # above PLR's 45 °C for BioTek readers
    off = lab.call("reader_stop_heating", {})
    assert off.ok, off.error
    assert backend.sent[-2] == ("g", "00000")  # PLR's BioTek stop_heating_or_cooling
    assert off.data["setpoint"] is None


def test_a_spectramax_reports_its_own_setpoint() -> None:
    backend = TempM5(port="fake")
    limits = limits_for(backend)
    assert (limits.temperature.low, limits.temperature.high) == (0, 45)
    lab = _lab(backend)
    assert _set(lab, 37.0).ok
    assert "!TEMP 37.0" in backend.commands
    reading = lab.call("reader_get_temperature", {})
    assert reading.data == {"temperature": 36.4, "setpoint": 37.0, "unit": "degree_Celsius"}
    sent = list(backend.commands)
    off = lab.call("reader_stop_heating", {})  # PLR 0.2.2 has no heater-off command for it
    assert not off.ok and off.error["code"] == "not_supported"
    assert "reader_set_temperature" in off.error["hint"] and backend.commands == sent


def test_a_reader_without_temperature_control_refuses_with_a_hint() -> None:
    lab = _lab(PlateReaderChatterboxBackend())
    calls = (lab.call("reader_stop_heating", {}), lab.call("reader_get_temperature", {}))
    for result in (_set(lab, 37.0), *calls):
        assert not result.ok
        assert result.error["code"] == "not_supported"
        assert "incubator" in result.error["hint"]
