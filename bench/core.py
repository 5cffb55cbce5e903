"""The tool core's cost: ``lab.call`` against calling the method directly, and against the floor.

The floor is what any validated call must pay: strict pydantic validation of the same arguments
plus their unit conversion with prebuilt pint units. The overhead is ``lab.call`` less the
method called directly the same way: a simulated instrument's call is stepped without the event
loop (:mod:`labtools.eager`), so its direct call is stepped too; a hardware driver's runs on the
lab's loop, so its direct call runs on a loop. Goal: each overhead ≤ 1.3× the floor.
Also: ``import labtools`` beside ``import pylabrobot.liquid_handling`` (cold, in subprocesses).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
from collections.abc import Coroutine, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from bench.timing import few, interleaved_best_us, median_us, restore_sigint, row
from labtools import Lab
from labtools.instruments import LiquidHandler, LiquidHandlerLimits, TipType
from labtools.units import Quantity, Range, qty, ureg

UL = "microliter"
ITEM = {"channel": 0, "well": "plate_1:A1", "volume": {"value": 50.0, "unit": "microliter"}}
ARGS = {"items": [ITEM]}


class NullHandler(LiquidHandler):
    """A liquid handler whose tools do nothing, so only the dispatch is measured."""

    limits = LiquidHandlerLimits(channels=8, tip_types=(TipType("t", Range(0.5, 1000, UL)),))

    async def aspirate(self, items: Sequence[Any]) -> Any:
        moved = {"volume": qty(50.0, UL), "tip_volume": qty(50.0, UL), "well_volume": qty(0.0, UL)}
        return {"items": [{"channel": i["channel"], "well": i["well"], **moved} for i in items]}

    async def get_deck(self) -> Any:
        return {
            "labware": [],
            "tips_left": {},
            "channels": [],
            "volume_unit": UL,
            "labels": {},
            "free_sites": [],
        }

    async def pick_up_tips(self, tip_rack: str, channels: Sequence[int]) -> Any: ...
    async def drop_tips(self, channels: Sequence[int]) -> Any: ...
    async def dispense(self, items: Sequence[Any]) -> Any: ...
    async def transfer(self, transfers: Sequence[Any], tip_rack: str, *args: Any) -> Any: ...
    async def mix(self, items: Sequence[Any], cycles: int) -> Any: ...
    async def move_plate(self, plate: str, destination: str) -> Any: ...


class SimulatedNullHandler(NullHandler):
    """The same, declared simulated: ``lab.call`` steps its calls without the event loop."""

    simulated = True


class _Volume(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    value: float
    unit: Literal["nanoliter", "microliter", "milliliter"]


class _AspirateArgs(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    channel: int
    well: str
    volume: _Volume


def main() -> None:
    restore_sigint()
    handler = NullHandler("lh")
    lab = Lab([handler])
    simulated = Lab([SimulatedNullHandler("lh")])
    loop = asyncio.new_event_loop()
    units = {u: ureg.Unit(u) for u in ("nanoliter", "microliter", "milliliter")}

    def floor() -> float:
        args = _AspirateArgs.model_validate(ITEM)
        return Quantity(args.volume.value, units[args.volume.unit]).m_as(units["microliter"])

    volume = Quantity(50.0, "microliter")
    best = interleaved_best_us(
        {
            "direct": lambda: _stepped(handler.aspirate([{**ITEM, "volume": volume}])),
            "call": lambda: simulated.call("lh_aspirate", ARGS),
            "direct_loop": lambda: loop.run_until_complete(
                handler.aspirate([{**ITEM, "volume": volume}])
            ),
            "call_loop": lambda: lab.call("lh_aspirate", ARGS),
            "read": lambda: simulated.call("lh_get_deck", {}),
            "floor": floor,
        }
    )
    floor_us = best["floor"]
    overhead = best["call"] - best["direct"]
    overhead_loop = best["call_loop"] - best["direct_loop"]
    print(
        "tool core: dispatch through lab.call (a liquid handler whose tools do nothing);"
        " best of 15 interleaved rounds"
    )
    call = best["call"]
    print(
        row(
            "lab.call('lh_aspirate'), simulated (schema, units, journal)",
            call,
            note=f"{1e6 / call:,.0f} calls/s",
        )
    )
    read = best["read"]
    print(
        row("lab.call('lh_get_deck') (a cheap read tool)", read, note=f"{1e6 / read:,.0f} calls/s")
    )
    print(row("the aspirate method called directly, stepped (no loop)", best["direct"]))
    print(row("overhead of lab.call over the direct call", overhead))
    print(row("lab.call('lh_aspirate'), hardware (on the lab's loop)", best["call_loop"]))
    print(row("the aspirate method called directly, on its own loop", best["direct_loop"]))
    print(row("overhead of lab.call over the direct call, on a loop", overhead_loop))
    print(row("floor: strict pydantic validation + pint unit conversion", floor_us))
    print(f"  overhead / floor = {overhead / floor_us:.2f}  (goal ≤ 1.3)")
    print(f"  overhead / floor, on a loop = {overhead_loop / floor_us:.2f}  (goal ≤ 1.3)")
    loop.close()
    lab.close()
    simulated.close()
    _virtual_lab_rates()
    _imports()


def _stepped(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends by stepping it once, as lab.call steps a simulator."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("the coroutine suspended")


def _virtual_lab_rates() -> None:
    try:
        lab = Lab.virtual(seed=0)
    except Exception as exc:  # the virtual lab is optional for this benchmark
        print(f"  (virtual lab unavailable: {exc})")
        return
    with lab:
        lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
        item = {"channel": 0, "well": "reservoir:A1", "volume": {"value": 20, "unit": UL}}
        args_a = args_d = {"items": [item]}

        def pair() -> None:
            lab.call("lh_aspirate", args_a)
            lab.call("lh_dispense", args_d)

        aspirate_pair = median_us(pair, number=50, repeat=5)
        read = median_us(lambda: lab.call("lh_get_deck", {}), number=50, repeat=5)
    print("virtual lab through lab.call (PyLabRobot front end + physics backend)")
    print(
        row(
            "lh_aspirate + lh_dispense pair",
            aspirate_pair,
            note=f"{2e6 / aspirate_pair:,.0f} calls/s",
        )
    )
    print(row("lh_get_deck", read, note=f"{1e6 / read:,.0f} calls/s"))


def _import_ms(module: str, runs: int) -> float:
    code = f"import time; t=time.perf_counter(); import {module}; print(time.perf_counter()-t)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times) * 1e3


def _imports() -> None:
    runs = few(5, 1)
    print(f"cold imports (median of {runs} fresh interpreter{'s' if runs > 1 else ''})")
    for module in ("labtools", "labtools.lab", "pylabrobot.liquid_handling", "pint"):
        print(row(f"import {module}", _import_ms(module, runs), "ms"))


if __name__ == "__main__":
    main()
