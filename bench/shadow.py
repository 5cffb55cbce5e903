"""A shadow run's added cost per call, against the plain call, in the same run.

One lab loaded with ``shadow=True``, its calls made with the shadow on and with it off
(``lab.shadow`` set aside), interleaved: the same objects either way. With a 300 µL tip on
channel 0 it makes a moving call, an aspirate of 100 µL from ``reservoir:A1`` and its dispense
back (so volumes stay put); read-only calls are not shadowed (they pay one test of the tool's
hints). The shadow's part is split into the mirror (the twin made to believe the real lab's
state: every container, tip spot, channel and plate) and the twin's own call. Labs: the STAR dry run
(``docs/examples/star_dry_run.toml``: PLR's STAR chatterbox generating firmware strings) and
the virtual lab (physics on both sides). Goal: on the STAR dry run a shadowed moving call
≤ 1.5× the plain one (a real instrument's call takes longer still: seconds of motion); on the
virtual lab, where the plain call is itself a simulation, ≤ 4×.

Run: ``python -m bench.shadow``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources.abc import Traversable
from pathlib import Path

from bench.timing import interleaved_best_us, restore_sigint, row
from labtools import Lab
from labtools.config import packaged
from labtools.lab import VIRTUAL_LAB
from labtools.shadow import Shadow

STAR = Path(__file__).resolve().parent.parent / "docs" / "examples" / "star_dry_run.toml"
UL = {"value": 100.0, "unit": "microliter"}
ITEMS = {"items": [{"channel": 0, "well": "reservoir:A1", "volume": UL}]}


def aspirate_dispense(lab: Lab) -> Callable[[], None]:
    """One aspirate and one dispense of 100 µL on channel 0 (a tip mounted), as a call."""

    def pair() -> None:
        for name in ("lh_aspirate", "lh_dispense"):
            result = lab.call(name, ITEMS)
            if not result.ok:
                raise RuntimeError(f"{name}: {result.error}")

    return pair


def _unshadowed(lab: Lab, shadow: Shadow[Lab], call: Callable[[], object]) -> Callable[[], None]:
    def plain() -> None:
        lab.shadow = None
        try:
            call()
        finally:
            lab.shadow = shadow

    return plain


def _bench(label: str, path: str | Path | Traversable) -> None:
    with Lab.load(path, shadow=True) as lab:
        lab.lh.pick_up_tips("tips_300ul", [0])
        shadow = lab.shadow
        assert shadow is not None
        twin = shadow.twin

        times = interleaved_best_us(
            {
                "plain": _unshadowed(lab, shadow, aspirate_dispense(lab)),
                "shadow": aspirate_dispense(lab),
                "mirror": shadow.sync,
                "twin": aspirate_dispense(twin),
            },
            rounds=9,
            number=40,
        )
    per_call = {k: v / 2 for k, v in times.items() if k in ("plain", "shadow", "twin")}
    added = per_call["shadow"] - per_call["plain"]
    print(f"{label}:")
    print(row("moving call, plain (aspirate or dispense)", per_call["plain"]))
    print(row("moving call, shadowed", per_call["shadow"]))
    print(
        row("  added by the shadow", added, note=f"{per_call['shadow'] / per_call['plain']:.2f}×")
    )
    print(row("    of which the mirror (whole deck)", times["mirror"]))
    print(row("    of which the twin's call", per_call["twin"]))


def main() -> None:
    restore_sigint()
    _bench("STAR dry run (STAR chatterbox; twin: physics)", STAR)
    _bench("virtual lab (physics; twin: physics)", packaged(VIRTUAL_LAB))


if __name__ == "__main__":
    main()
