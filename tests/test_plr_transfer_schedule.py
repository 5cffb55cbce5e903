"""lh_transfer's planner at batch scale: the linear schedule places every transfer where the
definition (the earliest round after everything it depends on that it can join) puts it, and a
refused batch of 1,536 transfers names the transfer at fault and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lh_rig import Rig, rig, ul

from labtools.drivers.pylabrobot.batch import MAX_TRANSFERS, Move, schedule
from labtools.drivers.pylabrobot.geometry import Positions
from labtools.drivers.pylabrobot.multichannel import fits
from labtools.units import Quantity

#: troughs (several channels share one), wells of three plates, and the cuvette
CONTAINERS = [
    "reservoir:A1",
    "reservoir:A2",
    "reservoir:A3",
    "plate_1:A1",
    "plate_1:B1",
    "plate_1:H12",
    "plate_2:C3",
    "plate_384:A1",
    "plate_384:P24",
    "cuvette",
]


@pytest.fixture(scope="module")
def setup() -> Rig:
    return rig(seed=3)


def _reference(
    setup: Rig, moves: Sequence[Move], chans: Sequence[int], mixing: bool
) -> list[list[int]]:
    """The schedule by its definition, transfer against transfer and round by round."""
    handler = setup.handler

    def depends(u: Move, t: Move) -> bool:
        return (
            u.destination is t.source
            or u.source is t.destination
            or (mixing and u.destination is t.destination)
        )

    def joins(round_: list[Move], t: Move) -> bool:
        if len(round_) >= len(chans):
            return False
        for side in ("source", "destination"):
            containers = [getattr(m, side) for m in round_] + [getattr(t, side)]
            if len({id(c) for c in containers}) == len(containers):
                continue
            if len({id(c) for c in containers}) > 1:
                return False
            if not fits(handler, containers[0], chans[: len(containers)]):
                return False
        return True

    rounds: list[list[Move]] = []
    placed: list[int] = []
    for t in moves:
        r = max([ru + 1 for u, ru in zip(moves, placed, strict=False) if depends(u, t)] or [0])
        while r < len(rounds) and not joins(rounds[r], t):
            r += 1
        if r == len(rounds):
            rounds.append([])
        rounds[r].append(t)
        placed.append(r)

    def key(m: Move) -> tuple[float, float, int]:
        y = (m.source.get_absolute_location().y, m.destination.get_absolute_location().y)
        return (-y[0], -y[1], m.index)

    return [[m.index for m in sorted(round_, key=key)] for round_ in rounds]


def _moves(setup: Rig, pairs: Sequence[tuple[str, str]]) -> list[Move]:
    volume = Quantity(10.0, "microliter")
    return [
        Move(i, setup.well(s), s, setup.well(d), d, 10.0, volume) for i, (s, d) in enumerate(pairs)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from(CONTAINERS), st.sampled_from(CONTAINERS)), max_size=60
    ),
    channels=st.integers(min_value=1, max_value=8),
    mixing=st.booleans(),
)
def test_the_schedule_is_the_definitions(
    setup: Rig, pairs: list[tuple[str, str]], channels: int, mixing: bool
) -> None:
    moves = _moves(setup, pairs)
    chans = list(range(channels))
    got = [
        [m.index for m in round_] for round_ in schedule(setup.handler, moves, chans, mixing=mixing)
    ]
    assert got == _reference(setup, moves, chans, mixing)


def test_positions_are_plrs(setup: Rig) -> None:
    """The cached absolute y equals PLR's own for everything on the deck, plates on the
    reader's site and rotated ones included."""
    deck = setup.handler.plr.deck
    setup.ok("lh_move_plate", {"plate": "plate_2", "destination": "reader"})
    where = Positions()
    placed = [r for r in deck.get_all_resources() if r.location is not None]
    assert len(placed) > 900
    for resource in placed:
        assert where.y(resource) == resource.get_absolute_location().y, resource.name
    setup.ok("lh_move_plate", {"plate": "plate_2", "destination": "plate_carrier-2"})


def _big_batch(wrong: int) -> list[dict]:
    """1,536 transfers of 10 µL from two troughs into plate_384 (each well four times over),
    transfer ``wrong`` drawing 200 µL from plate_384:H1, which transfers 7, 391, 775 and 1159
    fill."""
    rows = "ABCDEFGHIJKLMNOP"
    wells = [f"plate_384:{rows[i % 16]}{1 + i // 16}" for i in range(384)]
    batch = [
        {"source": f"reservoir:A{1 + i % 2}", "destination": wells[i % 384], "volume": ul(10)}
        for i in range(MAX_TRANSFERS)
    ]
    batch[wrong] = {"source": wells[7], "destination": "plate_1:A1", "volume": ul(200)}
    return batch


@pytest.mark.parametrize(("wrong", "holds"), [(MAX_TRANSFERS - 1, 40), (900, 30)])
def test_a_refused_batch_of_1536_names_the_transfer_and_changes_nothing(
    wrong: int, holds: int
) -> None:
    """The overdraw is found where the batch's own earlier transfers leave the well."""
    setup = rig(seed=4)
    before = setup.snapshot()
    result = setup.call(
        "lh_transfer",
        {
            "transfers": _big_batch(wrong),
            "tip_rack": "tips_50ul",
            "tips": "reuse",
            "channels": [],
            "mix_cycles": 0,
            "mix_volume": ul(10),
        },
    )
    assert not result.ok
    error = result.error or {}
    assert error["code"] == "interlock", error
    assert error["field"] == f"/transfers/{wrong}/volume", error
    assert error["message"].startswith(
        f"transfer {wrong} (plate_384:H1 → plate_1:A1): plate_384:H1 holds {holds} µL"
    ), error
    assert setup.snapshot() == before


def test_a_batch_of_1536_over_its_tips_is_refused_whole() -> None:
    """With a new tip per transfer, 1,536 transfers need 16 racks' worth: refused at the rack,
    nothing moved."""
    setup = rig(seed=4)
    before = setup.snapshot()
    batch = _big_batch(0)
    batch[0] = batch[1]
    result = setup.call(
        "lh_transfer",
        {
            "transfers": batch,
            "tip_rack": "tips_50ul",
            "tips": "new",
            "channels": [],
            "mix_cycles": 0,
            "mix_volume": ul(10),
        },
    )
    assert not result.ok
    assert (result.error or {})["code"] == "interlock"
    assert (result.error or {})["field"] == "/tip_rack"
    assert "needs 1536 tips" in (result.error or {})["message"]
    assert setup.snapshot() == before
