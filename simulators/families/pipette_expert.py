"""The ``pipette`` family's expert: ISO 8655-6's gravimetric method on one channel.

1. The room's temperature (the reader's chamber thermometer) gives ISO 8655-6's Z factor, the
   µL per mg of water a balance reads at it (:func:`~labtools.simulators.balance.physics.
   z_factor`: 1.0040 at 25 °C).
2. The vessel tared (stable); one tip of the named type on the channel, kept for the run
   (water into water: a reused tip delivers as a fresh one).
3. :data:`IDLE` idle cycles in a row, then one reading: each cycle the channel draws the
   volume from the water and puts it in the waste; the reading over the tare is the vessel's
   evaporation loss over that many cycles (ISO 8655-6's evaporation correction).
4. As many deliveries as the budget leaves (at most :data:`MOST`), each into the vessel and
   read (stable) after it: cumulative weighing, a delivery the difference of the readings
   around it, plus the idle cycles' mean loss.
5. The mean of the deliveries × Z; its standard uncertainty from their spread (widened for few
   replicates: a Student-t's sd over the normal's) and the evaporation correction's.
"""

from __future__ import annotations

import math

import numpy as np

from labtools.simulators.balance.physics import z_factor
from labtools.simulators.tasks.scripting import Call, batch

__all__ = ["IDLE", "MOST", "calibrate"]

WATER, WASTE, VESSEL = "reservoir:A1", "reservoir:A11", "weighing_vessel"
#: idle cycles before the one reading of their loss [A: six cut the reading's noise in the
#: loss per cycle to a sixth: at level 5 the 10 µL tips' evaporation correction (~0.01 mg a
#: cycle) was otherwise known no better than the balance's noise over three cycles]
IDLE = 6
#: the most deliveries weighed [A: ISO 8655-6 asks 10 for a calibration; more cut the random
#: error's share of the mean]
MOST = 16
#: calls besides the cycles: temperature, tare, tips, submit, and one spare [C]
OVERHEAD = 5


def calibrate(
    call: Call, *, channel: int, rack: str, volume_ul: float, calls: int
) -> tuple[float, float]:
    """The channel's mean delivered volume (µL) and its standard uncertainty, through
    ``call`` only, within ``calls`` tool calls."""
    celsius = float(call("reader_get_temperature")["temperature"])
    z = z_factor(celsius)  # µL per mg
    call("balance_tare", mode="stable")
    call("lh_pick_up_tips", tip_rack=rack, channels=[channel])
    n = max(2, min(MOST, (calls - OVERHEAD - IDLE - 1) // 2))

    def transfer(destination: str) -> None:
        move = [(WATER, destination, volume_ul)]
        call("lh_transfer", **batch(move, "mounted", tip_rack=rack, channels=[channel]))

    def weigh() -> float:
        return _mg(call("balance_weigh", mode="stable"))

    for _ in range(IDLE):  # idle cycles in a row, one reading: the loss of IDLE cycles
        transfer(WASTE)
    start = weigh()
    loss = start / IDLE  # mg per cycle, negative: what evaporated
    readings = [start]
    for _ in range(n):
        transfer(VESSEL)
        readings.append(weigh())
    volumes = (np.diff(readings) - loss) * z
    count = len(volumes)
    spread = float(np.std(volumes, ddof=1))
    widen = math.sqrt((count - 1) / (count - 3)) if count > 3 else 2.0
    balance_sd = spread / math.sqrt(2.0)  # at most: a difference holds two readings' noise
    loss_sd = math.sqrt(2.0) * balance_sd / IDLE
    sd = math.hypot(spread / math.sqrt(count) * widen, loss_sd * z)
    return float(np.mean(volumes)), sd


def _mg(reading: dict) -> float:
    mass = reading["mass"]
    scale = {"gram": 1000.0, "milligram": 1.0}[mass["unit"]]
    return float(mass["value"]) * scale
