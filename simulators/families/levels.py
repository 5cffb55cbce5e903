"""Difficulty levels 1-5: what each changes in the physics and the budget (never the wording).

Harder levels put the analyte nearer the limit of detection, raise a second absorber's share
of the signal, make the reader noisier and the budget smaller. A level's figures are design
choices [A], each bounded by the instrument: level 1's sample reads inside the reader's
accurate 0.1-2.0 OD neat; level 5's starts at ten times the 0.001 OD noise floor before the
noise is tripled, so an answer within 5 % takes replicates and the longest path a well holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from labtools.session import Budget

__all__ = ["LEVEL", "Level"]


@dataclass(frozen=True)
class Level:
    """One level's physics and budget."""

    number: int
    #: the sample's analyte, its optical density neat in a 200 µL Corning 96 flat well at its
    #: peak (library ε, nominal path): log-uniform within
    od: tuple[float, float]
    #: a second absorber's optical density at the analyte's peak over the analyte's
    #: (log-uniform within; where the structure has one)
    interferent_ratio: tuple[float, float]
    #: the reader's noise: its noise floor times this, its shot-noise SNR divided by it
    noise: float
    budget: Budget


LEVEL = {
    1: Level(
        1, (0.4, 2.0), (0.1, 0.3), 1.0, Budget(calls=150, tips=96, reagent_ul=10_000, wells=96)
    ),
    2: Level(2, (0.2, 1.2), (0.2, 0.6), 1.0, Budget(calls=120, tips=64, reagent_ul=9000, wells=72)),
    3: Level(
        3, (0.08, 0.6), (0.5, 1.5), 1.5, Budget(calls=100, tips=48, reagent_ul=8000, wells=48)
    ),
    4: Level(
        4, (0.03, 0.25), (1.0, 3.0), 2.0, Budget(calls=80, tips=32, reagent_ul=7000, wells=32)
    ),
    5: Level(
        5, (0.01, 0.08), (2.0, 5.0), 3.0, Budget(calls=60, tips=24, reagent_ul=7000, wells=24)
    ),
}
