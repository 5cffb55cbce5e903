"""The liquid handler's cost: an aspirate+dispense pair through our adapter and physics backend,
beside the same pair through PyLabRobot's chatterbox and through a do-nothing backend.

All three run PLR's front end with tip and volume tracking on, one channel, 100 µL, aspirating
from and dispensing back into the same well (so volumes stay put), in one event loop, in this
run, their rounds interleaved. Goal: adapter + physics pair ≤ 0.45× the chatterbox pair
(issue 21). Also each tool through ``lab.call`` on the virtual deck (mean and max; goal: every
tool, ``lh_move_plate`` included, ≤ 2 ms), the cost of the virtual deck, and ``lh_transfer``
batches: a refused batch (its last transfer overdraws a well) of 192 and of 1,536 transfers
beside a valid 192-transfer batch that runs (goals: refusal linear in the batch, 1,536 / 192 ≈ 8,
and the refused 1,536 within twice the valid 192).

Run: ``python -m bench.liquid_handler``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import math
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pylabrobot.liquid_handling import LiquidHandler as PLRFrontEnd
from pylabrobot.liquid_handling import LiquidHandlerBackend
from pylabrobot.liquid_handling.backends import LiquidHandlerChatterboxBackend

from bench.timing import restore_sigint, row
from labtools import Lab
from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.drivers.pylabrobot.trackers import enable_tracking
from labtools.simulators.deck import build_deck, virtual_deck
from labtools.simulators.liquid_handling import PhysicsLiquidHandlerBackend
from labtools.simulators.world import World
from labtools.units import Quantity

WELL = "plate_1:A1"
VOLUME_UL = 100.0


class NopBackend(LiquidHandlerBackend):
    """A backend that does nothing: what remains is PLR's front end with tracking."""

    _num_arms = 1
    num_channels = 8  # type: ignore[assignment]  # a class attribute satisfies the property

    async def setup(self) -> None:
        await super().setup()

    async def stop(self) -> None: ...
    async def pick_up_tips(self, ops: Any, use_channels: Any) -> None: ...
    async def drop_tips(self, ops: Any, use_channels: Any) -> None: ...
    async def aspirate(self, ops: Any, use_channels: Any) -> None: ...
    async def dispense(self, ops: Any, use_channels: Any) -> None: ...
    async def pick_up_tips96(self, pickup: Any) -> None: ...
    async def drop_tips96(self, drop: Any) -> None: ...
    async def aspirate96(self, aspiration: Any) -> None: ...
    async def dispense96(self, dispense: Any) -> None: ...
    async def pick_up_resource(self, pickup: Any) -> None: ...
    async def move_picked_up_resource(self, move: Any) -> None: ...
    async def drop_resource(self, drop: Any) -> None: ...

    def can_pick_up_tip(self, channel_idx: int, tip: Any) -> bool:
        return True


def _world() -> World:
    return World(
        0,
        stocks=[
            {
                "well": WELL,
                "species": "tartrazine",
                "concentration_uM": 100,
                "volume_ul": 300,
                "label": "tartrazine 100 µM",
            }
        ],
    )


Pair = Callable[[], Awaitable[None]]


async def _median_pairs_us(
    pairs: dict[str, Pair], *, rounds: int = 9, number: int = 300, warmup: int = 50
) -> dict[str, float]:
    """Each pair's median over ``rounds`` of the mean time of ``number`` awaited pairs (µs),
    the rounds of all pairs interleaved so that a busy spell on a shared machine hits them
    alike."""
    for pair in pairs.values():
        for _ in range(warmup):
            await pair()
    means: dict[str, list[float]] = {name: [] for name in pairs}
    gc.disable()
    try:
        for _ in range(rounds):
            for name, pair in pairs.items():
                start = time.perf_counter()
                for _ in range(number):
                    await pair()
                means[name].append((time.perf_counter() - start) / number * 1e6)
    finally:
        gc.enable()
    return {name: statistics.median(times) for name, times in means.items()}


async def _plr_pair(backend: LiquidHandlerBackend, spread: str = "wide") -> Pair:
    deck = build_deck()
    lh = PLRFrontEnd(backend=backend, deck=deck)
    await lh.setup()
    well = deck.get_resource("plate_1").get_item("A1")
    well.tracker.set_volume(300.0)
    await lh.pick_up_tips(deck.get_resource("tips_300ul")["A1"], use_channels=[0])

    async def pair() -> None:
        await lh.aspirate([well], vols=[VOLUME_UL], use_channels=[0], spread=spread)
        await lh.dispense([well], vols=[VOLUME_UL], use_channels=[0], spread=spread)

    return pair


async def _adapter(backend_of: Callable[[World], LiquidHandlerBackend]) -> PLRLiquidHandler:
    world = _world()
    handler = PLRLiquidHandler(
        "lh",
        virtual_deck(world, None).deck,  # type: ignore[arg-type]
        backend_of(world),
    )
    await handler.setup()
    await handler.pick_up_tips("tips_300ul", [0])
    return handler


def _adapter_pair(handler: PLRLiquidHandler) -> Pair:
    volume = Quantity(VOLUME_UL, "microliter")

    async def pair() -> None:
        items = [{"channel": 0, "well": WELL, "volume": volume}]
        await handler.aspirate(items)
        await handler.dispense(items)

    return pair


async def _measure() -> dict[str, float]:
    enable_tracking()
    with contextlib.redirect_stdout(io.StringIO()):  # the chatterbox prints a table per op
        pairs = {
            "chatterbox": await _plr_pair(LiquidHandlerChatterboxBackend(num_channels=8)),
            "chatterbox_custom": await _plr_pair(
                LiquidHandlerChatterboxBackend(num_channels=8), spread="custom"
            ),
            "nop": await _plr_pair(NopBackend()),
            "adapter_nop": _adapter_pair(await _adapter(lambda w: NopBackend())),
            "adapter_physics": _adapter_pair(await _adapter(PhysicsLiquidHandlerBackend)),
        }
        return await _median_pairs_us(pairs)


def _lab_pair_us() -> float:
    world = _world()
    handler = PLRLiquidHandler(
        "lh",
        virtual_deck(world, None).deck,  # type: ignore[arg-type]
        PhysicsLiquidHandlerBackend(world),
    )
    with Lab([handler], clock=world.clock) as lab:
        lab.call("lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
        item = {"channel": 0, "well": WELL, "volume": {"value": VOLUME_UL, "unit": "microliter"}}
        args = {"items": [item]}
        rounds = []
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(200):
                lab.call("lh_aspirate", args)
                lab.call("lh_dispense", args)
            rounds.append((time.perf_counter() - start) / 200 * 1e6)
    return statistics.median(rounds)


#: plate moves round the virtual deck's sites, each plate back where it started
PLATE_MOVES = [
    ("plate_1", "reader"),
    ("plate_384", "spare_carrier-0"),
    ("plate_2", "spare_carrier-1"),
    ("plate_1", "plate_carrier-1"),
    ("plate_384", "plate_carrier-3"),
    ("plate_2", "plate_carrier-2"),
]


def _tool_ms(rounds: int = 20) -> dict[str, tuple[float, float]]:
    """Each liquid-handler tool through ``lab.call`` on the virtual lab: (mean, max) ms."""

    times: dict[str, list[float]] = {}

    def timed(lab: Lab, tool: str, args: dict[str, Any]) -> None:
        start = time.perf_counter()
        result = lab.call(tool, args)
        times.setdefault(tool, []).append((time.perf_counter() - start) * 1e3)
        if not result.ok:
            raise RuntimeError(f"{tool}: {result.error}")

    fifty = {"value": 50.0, "unit": "microliter"}
    with Lab.virtual(0) as lab:
        for n in range(rounds):
            item = {
                "channel": 0,
                "well": f"plate_2:{'ABCDEFGH'[n % 8]}{1 + n // 8}",
                "volume": fifty,
            }
            mix = {**item, "volume": {"value": 30.0, "unit": "microliter"}}
            timed(lab, "lh_pick_up_tips", {"tip_rack": "tips_300ul", "channels": [0]})
            timed(lab, "lh_aspirate", {"items": [{**item, "well": "reservoir:A1"}]})
            timed(lab, "lh_dispense", {"items": [item]})
            timed(lab, "lh_mix", {"items": [mix], "cycles": 1})
            timed(lab, "lh_drop_tips", {"channels": [0]})
            timed(lab, "lh_get_deck", {})
            for plate, destination in PLATE_MOVES:
                timed(lab, "lh_move_plate", {"plate": plate, "destination": destination})
    return {tool: (statistics.fmean(ts), max(ts)) for tool, ts in times.items()}


#: the batch's wells: plate_384 column by column, filled from two troughs
_WELLS_384 = [f"plate_384:{'ABCDEFGHIJKLMNOP'[i % 16]}{1 + i // 16}" for i in range(384)]


def _batch(size: int, *, refused: bool) -> dict[str, Any]:
    """``size`` transfers of 10 µL, troughs into plate_384, tips reused; a refused batch's last
    transfer draws 200 µL from a well the batch fills with far less."""
    ten = {"value": 10.0, "unit": "microliter"}
    transfers: list[dict[str, Any]] = [
        {"source": f"reservoir:A{1 + i % 2}", "destination": _WELLS_384[i % 384], "volume": ten}
        for i in range(size)
    ]
    if refused:
        transfers[-1] = {
            "source": _WELLS_384[7],
            "destination": "plate_1:A1",
            "volume": {"value": 200.0, "unit": "microliter"},
        }
    return {
        "transfers": transfers,
        "tip_rack": "tips_50ul",
        "tips": "reuse",
        "channels": [],
        "mix_cycles": 0,
        "mix_volume": ten,
    }


def _batch_ms(rounds: int = 5) -> dict[str, float]:
    """Best-of-``rounds`` ms of ``lh_transfer`` through ``lab.call``: refused batches of 192
    and 1,536 (on one lab: a refusal changes nothing) and a valid 192 (a fresh lab per round),
    the rounds interleaved."""
    best = {"refused_192": math.inf, "refused_1536": math.inf, "valid_192": math.inf}
    calls = {
        "refused_192": _batch(192, refused=True),
        "refused_1536": _batch(1536, refused=True),
        "valid_192": _batch(192, refused=False),
    }
    with Lab.virtual(0) as refusing:
        for _ in range(rounds):
            for name, args in calls.items():
                if name == "valid_192":
                    with Lab.virtual(0) as lab:
                        best[name] = min(best[name], _timed_call(lab, args, ok=True))
                else:
                    best[name] = min(best[name], _timed_call(refusing, args, ok=False))
    return best


def _timed_call(lab: Lab, args: dict[str, Any], *, ok: bool) -> float:
    start = time.perf_counter()
    result = lab.call("lh_transfer", args)
    elapsed = (time.perf_counter() - start) * 1e3
    if result.ok != ok:
        raise RuntimeError(f"lh_transfer: expected ok={ok}, got {result.error}")
    return elapsed


def _ms(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e3


def main() -> None:
    restore_sigint()
    loop = asyncio.new_event_loop()
    try:
        pairs = loop.run_until_complete(_measure())
    finally:
        loop.close()
    chatter = pairs["chatterbox"]
    print(
        "liquid handler: aspirate + dispense pair, 1 channel, 100 µL, tracking on"
        " (median of 9 interleaved rounds)"
    )
    print(row("PLR + chatterbox backend (stdout redirected)", chatter))
    print(row("PLR + do-nothing backend", pairs["nop"]))
    print(row("PLR + chatterbox, spread='custom' (the adapter's call)", pairs["chatterbox_custom"]))
    print(row("adapter (checks, undo) + do-nothing backend", pairs["adapter_nop"]))
    print(row("adapter + PhysicsLiquidHandlerBackend", pairs["adapter_physics"]))
    print(
        f"  adapter + physics / chatterbox = {pairs['adapter_physics'] / chatter:.2f}"
        "  (goal ≤ 0.45)"
    )
    print(
        f"  adapter + physics / chatterbox with spread='custom' = "
        f"{pairs['adapter_physics'] / pairs['chatterbox_custom']:.2f}"
    )
    print(row("adapter + physics through lab.call (schema, units, journal)", _lab_pair_us()))
    print("liquid-handler tools through lab.call on the virtual lab (goal ≤ 2 ms each)")
    for tool, (mean, most) in _tool_ms().items():
        print(row(f"{tool} (mean; max {most:.2f} ms)", mean, "ms"))
    batches = _batch_ms()
    print("lh_transfer batches through lab.call (best of 5)")
    print(row("valid batch of 192 transfers (runs)", batches["valid_192"], "ms"))
    print(row("refused batch of 192 (the last transfer overdraws)", batches["refused_192"], "ms"))
    print(row("refused batch of 1,536", batches["refused_1536"], "ms"))
    print(
        f"  refused 1,536 / valid 192 = {batches['refused_1536'] / batches['valid_192']:.2f}"
        "  (goal ≤ 2)"
    )
    print(
        f"  refused 1,536 / refused 192 = {batches['refused_1536'] / batches['refused_192']:.1f}"
        "  (linear: ≈ 8)"
    )
    world = _world()
    print("virtual deck")
    print(row("build_deck() from scratch", _ms(build_deck, 5), "ms"))
    print(
        row(
            "virtual_deck(world, backend) (copy of the template)",
            _ms(lambda: virtual_deck(world, None), 20),
            "ms",
        )
    )  # type: ignore[arg-type]
    print(
        row(
            "virtual_deck + PLRLiquidHandler + physics backend",
            _ms(
                lambda: PLRLiquidHandler(
                    "lh",
                    virtual_deck(world, None).deck,  # type: ignore[arg-type]
                    PhysicsLiquidHandlerBackend(world),
                ),
                20,
            ),
            "ms",
        )
    )


if __name__ == "__main__":
    main()
