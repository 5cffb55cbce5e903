"""Grounded tasks: experiments with hidden truth, scored from the physical world.

``TASKS`` maps each task id to its class (a :class:`labtools.session.Task`).
"""

from __future__ import annotations

from labtools.session.task import Task
from simulators.tasks.colour_matching import ColourMatching
from simulators.tasks.dye_quantification import DyeQuantification
from simulators.tasks.enzyme_kinetics import EnzymeInhibition, EnzymeKinetics
from simulators.tasks.indicator_pka import IndicatorPka
from simulators.tasks.standard_curve import StandardCurve

TASKS: dict[str, type[Task]] = {
    task.id: task
    for task in (
        ColourMatching,
        DyeQuantification,
        EnzymeInhibition,
        EnzymeKinetics,
        IndicatorPka,
        StandardCurve,
    )
}

__all__ = ["TASKS"]
