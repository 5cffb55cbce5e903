"""The ``pipette`` family's process rubric, read from the episode's calls: the shared process
analysis (:mod:`labtools.session.process`) replays pipetting and plate-reader calls only, so
the balance's readings are taken from the calls themselves (:attr:`Episode.calls`).

- ``net``: each delivery of the channel at the set volume into the vessel weighed alone: a
  stable reading (or tare) after the vessel's previous change and another before its next;
- ``replicates``: such deliveries, out of :data:`REPLICATES`;
- ``evaporation``: two stable readings around an interval with nothing put in the vessel
  (ISO 8655-6's evaporation loss);
- ``temperature``: the room's temperature read (the Z factor's water density).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from labtools.session.process import Component, Episode, Rubric
from labtools.units import ureg

__all__ = ["PROCESS_WEIGHT", "REPLICATES", "net_deliveries", "rubric"]

VESSEL = "weighing_vessel"
#: the process's share of the outcome [A: as the other families']
PROCESS_WEIGHT = 0.6
#: weighed deliveries for the replicates' full credit [A: ISO 8655-6 asks 10 for a calibration;
#: five give the mean's spread four degrees of freedom]
REPLICATES = 5


def _into_vessel(event: Mapping[str, Any]) -> list[tuple[int | None, float]]:
    """The (channel, µL) of each delivery into the vessel an ``lh_transfer`` made (the task offers
    no single dispense: a batch with its tips mounted pipettes on the chosen channel)."""
    args = event.get("arguments") or {}
    out: list[tuple[int | None, float]] = []
    if event["tool"] == "lh_transfer":
        channels = list(args.get("channels") or [])
        for item in args.get("transfers") or ():
            if isinstance(item, Mapping) and item.get("destination") == VESSEL:
                out.append((channels[0] if len(channels) == 1 else None, _ul(item.get("volume"))))
    return out


def _ul(value: object) -> float:
    """A journalled volume ``{"value", "unit"}`` in µL (NaN if it is none)."""
    if not isinstance(value, Mapping):
        return math.nan
    try:
        return float(ureg.Quantity(float(value["value"]), str(value["unit"])).to("microliter").m)
    except Exception:
        return math.nan


def _reading(event: Mapping[str, Any]) -> bool:
    return event["tool"] in ("balance_weigh", "balance_tare") and bool(
        (event.get("data") or {}).get("stable")
    )


def net_deliveries(episode: Episode, channel: int, volume_ul: float) -> tuple[int, int]:
    """(deliveries of ``volume_ul`` by ``channel`` into the vessel, those weighed net: a stable
    reading or tare after the vessel's previous change and another before its next)."""
    calls = episode.calls
    total = net = 0
    before = False
    pending = False
    for event in calls:
        moves = _into_vessel(event)
        if _reading(event):
            if pending:
                net += 1
            pending, before = False, True
            continue
        if not moves:
            continue
        ours = sum(1 for ch, v in moves if ch == channel and abs(v - volume_ul) < 1e-6)
        total += ours
        pending = before and ours == 1 and len(moves) == 1
        before = False
    return total, net


def _idle_weighed(episode: Episode) -> float:
    """1 if two stable readings bracket time passing with nothing put in the vessel."""
    last: float | None = None
    for event in episode.calls:
        if _into_vessel(event):
            last = None
        elif _reading(event):
            now = float(event.get("virtual_time_s", 0.0))
            if last is not None and now - last > 1.0:
                return 1.0
            last = now + float(event.get("virtual_s", 0.0))
    return 0.0


def rubric(channel: int, volume_ul: float) -> Rubric:
    """The process rubric of channel ``channel`` set to ``volume_ul``."""

    def net(e: Episode) -> float:
        total, weighed = net_deliveries(e, channel, volume_ul)
        return weighed / total if total else 0.0

    def replicates(e: Episode) -> float:
        return min(1.0, net_deliveries(e, channel, volume_ul)[1] / REPLICATES)

    def temperature(e: Episode) -> float:
        return float(any(c["tool"] == "reader_get_temperature" for c in e.calls))

    return Rubric(
        (
            Component(
                "net",
                0.3,
                net,
                "each delivery weighed alone: a stable reading before and after it (ISO 8655-6)",
            ),
            Component(
                "replicates", 0.3, replicates, f"deliveries weighed net, out of {REPLICATES}"
            ),
            Component(
                "evaporation",
                0.2,
                _idle_weighed,
                "an idle interval weighed: the vessel's evaporation loss",
            ),
            Component(
                "temperature",
                0.2,
                temperature,
                "the room's temperature read: the Z factor's water density",
            ),
        ),
        weight=PROCESS_WEIGHT,
        note="The stated uncertainty and probability are scored by the outcome itself "
        "(CRPS and Brier, strictly proper).",
    )
