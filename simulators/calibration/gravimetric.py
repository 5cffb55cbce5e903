"""The gravimetric volume check (ISO 8655-6): water weighed into the balance's vessel, per channel.

Made only of tool calls (``lh_*``, ``balance_*``, and ``reader_get_temperature`` for the room's
temperature where the lab has a reader), like the other runs of :mod:`.protocol`, and returning
a plain JSON-able record for :func:`~labtools.simulators.calibration.fit_gravimetric.
fit_gravimetric`.

Design (ISO 8655-6 §7 for multichannel devices: each channel on its own):

- per tip type (10, 50, 300, 1000 µL, one set of tips on the 8 channels, reused: water into
  water, and a tip reused with the same liquid delivers as a fresh one), at two test volumes,
  10 % and 100 % of the tip's nominal (ISO 8655-6's lowest and highest), :data:`REPLICATES`
  rounds: the 8 channels draw the volume from the water column (four at a time), the balance
  is read, then each channel in turn dispenses into the weighing vessel and the balance is
  read (stable) after it;
- **cumulative weighing**: the vessel is tared once and every reading is kept; a delivery is the
  difference of the readings around it. One reading per delivery instead of a tare and a reading
  (half the balance calls and the virtual time), and no tare's rounding; successive differences
  share a reading, but the deliveries of one channel never do (seven others come between
  them), so each channel's deliveries are independent given the balance's noise;
- **evaporation** (ISO 8655-6 §9.1: the loss of an idle cycle, measured and corrected): the
  reading after each round's aspiration closes an interval in which the vessel was left alone
  (the cycle without its delivery), about forty of them over the vessel's whole range of fill;
  the fit takes the rate and its dependence on the fill from them;
- the vessel is kept below :data:`FILL_LIMIT_UL`: before a round that would pass it, channels 0
  and 1 (with 1000 µL tips, swapped in for the round's own if need be) draw the vessel's water
  back into the water column down to :data:`RESIDUAL_UL` (pure water both: the test liquid is
  reused, as a lab reuses its equilibrated test water), and again at the end, so the water
  column holds for the later runs what it held before, less the residual and the evaporation.

On the virtual lab: 849 calls and about 50 virtual minutes [C: tests/test_calibration_
gravimetric.py]. Run it before the reader run: the virtual lab's water column (15 mL) holds the
largest round's 8 mL only before the reader has used two thirds of it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from labtools.simulators.calibration.protocol import WATER, CalibrationFailed, Recorder

__all__ = [
    "FILL_LIMIT_UL",
    "GRAVIMETRIC_TESTS",
    "REPLICATES",
    "RESIDUAL_UL",
    "TEMPERATURE_SD_C",
    "VESSEL",
    "gravimetric_run",
]

#: the weighing vessel on the balance's pan, as the liquid handler names it
VESSEL = "weighing_vessel"
#: per tip type (µL): the test volumes (µL), 10 % and 100 % of nominal [V: ISO 8655-6 tests at
#: 10, 50 and 100 % of the nominal volume; the two ends identify bias and spread's two terms]
GRAVIMETRIC_TESTS: dict[float, tuple[float, ...]] = {
    10.0: (1.0, 10.0),
    50.0: (5.0, 50.0),
    300.0: (30.0, 300.0),
    1000.0: (100.0, 1000.0),
}
#: deliveries of each channel at each test volume [A: ISO 8655-6 asks 10 for a calibration; 5
#: keep the run near 50 virtual minutes and still give each volume's spread four degrees of
#: freedom]
REPLICATES = 5
#: the vessel is never filled (by belief) above this (µL) [A: 90 % of its 10 mL]
FILL_LIMIT_UL = 9000.0
#: what emptying leaves in the vessel (µL): above the truth's deviation from the belief
#: (delivery errors, evaporation) so no channel draws air [A]
RESIDUAL_UL = 500.0
#: the room's temperature as the reader's chamber reads it, 1 sd (°C) [A: the vessel and the
#: reader sit apart on one bench; the reader's own sensor is within ±0.2 °C]
TEMPERATURE_SD_C = 0.5
#: the virtual deck's vessel (mm), for the fit's humidity [V: simulators/deck.py]
VESSEL_GEOMETRY_MM = {"diameter": 20.0, "depth": 40.0}

_CHANNELS = tuple(range(8))
_EMPTYING = (0, 1)  # two channels fit side by side in the vessel
_EMPTY_TIP = 1000.0
_DRAW = 0.95  # of a tip's nominal volume, per emptying trip


def _ul(value: float) -> dict[str, Any]:
    return {"value": float(value), "unit": "microliter"}


class _Weigher:
    """The run's state: the recorder, the lab's clock, the readings and the believed fill."""

    def __init__(self, lab: Any, source: str, vessel: str) -> None:
        self.rec = Recorder(lab)
        self.source = source
        self.vessel = vessel
        clock = getattr(lab, "clock", None)
        self._clock = clock.now if clock is not None else time.monotonic
        self._t0 = float(self._clock())
        self.weighings: list[dict[str, Any]] = []
        self.fill_ul = 0.0
        self.tip: float | None = None

    def weigh(self, event: str, **what: Any) -> None:
        """A stable reading; ``event`` says what happened to the vessel since the last one:
        ``start``, ``idle`` (nothing), ``delivery`` (``channel``, ``tip_ul``, ``volume_ul``),
        ``emptied``."""
        data = self.rec.call("balance_weigh", {"mode": "stable"})
        mass = data["mass"]
        if mass["unit"] != "gram":
            raise CalibrationFailed(f"the balance answered in {mass['unit']}, not gram")
        self.weighings.append(
            {
                "t_s": float(self._clock()) - self._t0,
                "g": float(mass["value"]),
                "stable": bool(data["stable"]),
                "event": event,
                **what,
            }
        )

    def tips(self, tip_ul: float | None, channels: Sequence[int] = _CHANNELS) -> None:
        """``channels`` to carry tips of ``tip_ul`` (``None``: none)."""
        if self.tip is not None:
            self.rec.drop(channels)
        if tip_ul is not None:
            self.rec.pick_up(f"tips_{tip_ul:g}ul", channels)

    def round(self, tip_ul: float, volume_ul: float) -> None:
        """Every channel draws ``volume_ul``; the idle reading; each dispenses and is weighed."""
        if self.fill_ul + len(_CHANNELS) * volume_ul > FILL_LIMIT_UL:
            self.empty()
        self.rec.aspirate(self.source, volume_ul, _CHANNELS)
        self.weigh("idle")
        for channel in _CHANNELS:
            self.rec.dispense([self.vessel], volume_ul, [channel])
            self.fill_ul += volume_ul
            self.weigh("delivery", channel=channel, tip_ul=tip_ul, volume_ul=volume_ul)

    def empty(self) -> None:
        """The vessel's water back to the water column down to :data:`RESIDUAL_UL`, with
        1000 µL tips on channels 0 and 1 (swapped in for the pass's tips, then back)."""
        swap = self.tip != _EMPTY_TIP
        if swap:
            if self.tip is not None:
                self.rec.drop(_EMPTYING)
            self.rec.pick_up(f"tips_{_EMPTY_TIP:g}ul", _EMPTYING)
        each = _DRAW * _EMPTY_TIP
        while self.fill_ul - RESIDUAL_UL > 1e-9:
            per = min(each, (self.fill_ul - RESIDUAL_UL) / len(_EMPTYING))
            items = [{"channel": c, "well": self.vessel, "volume": _ul(per)} for c in _EMPTYING]
            self.rec.call("lh_aspirate", {"items": items})
            self.rec.dispense([self.source] * len(_EMPTYING), per, _EMPTYING)
            self.fill_ul -= per * len(_EMPTYING)
        if swap:
            self.rec.drop(_EMPTYING)
            if self.tip is not None:
                self.rec.pick_up(f"tips_{self.tip:g}ul", _EMPTYING)
        self.weigh("emptied")


def gravimetric_run(
    lab: Any,
    *,
    tests: Mapping[float, Sequence[float]] | None = None,
    replicates: int = REPLICATES,
    source: str = WATER,
    vessel: str = VESSEL,
) -> dict[str, Any]:
    """Weigh every channel's deliveries of water per tip type (the module docstring)."""
    tests = dict(GRAVIMETRIC_TESTS if tests is None else tests)
    run = _Weigher(lab, source, vessel)
    rec = run.rec
    info = rec.call("balance_get_info", {})
    temperature, sd, where = 20.0, 3.0, "assumed: no thermometer among the lab's tools [A]"
    if "reader_get_temperature" in lab.tool_names():
        temperature = float(rec.call("reader_get_temperature", {})["temperature"])
        sd, where = TEMPERATURE_SD_C, "reader_get_temperature (the reader's idle chamber)"
    rec.call("balance_tare", {"mode": "stable"})
    run.weigh("start")
    for tip, volumes in sorted(tests.items()):
        run.tips(float(tip))
        run.tip = float(tip)
        for volume in volumes:
            for _ in range(replicates):
                run.round(float(tip), float(volume))
    if run.fill_ul > RESIDUAL_UL:
        run.empty()
    run.tips(None)
    run.tip = None
    return {
        "run": "gravimetric",
        "method": "gravimetric",
        "standard": "ISO 8655-6",
        "balance": {
            "model": info["model"],
            "serial_number": info["serial_number"],
            "readability_g": float(info["readability"]["value"]),
            "capacity_g": float(info["capacity"]["value"]),
        },
        "vessel": vessel,
        "vessel_geometry_mm": dict(VESSEL_GEOMETRY_MM),
        "source": source,
        "liquid": "water",
        "temperature_c": temperature,
        "temperature_sd_c": sd,
        "temperature_from": where,
        "replicates": replicates,
        "tests": {f"{tip:g}": [float(v) for v in volumes] for tip, volumes in tests.items()},
        "weighings": run.weighings,
        **rec.totals(),
    }
