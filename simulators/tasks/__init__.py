"""Grounded tasks: experiments with hidden truth, scored from the physical world.

``TASKS`` maps each task id to its class (a :class:`labtools.session.Task`).
"""

from __future__ import annotations

from labtools.simulators.tasks.colour_matching import ColourMatching
from labtools.simulators.tasks.dye_quantification import DyeQuantification
from labtools.simulators.tasks.enzyme_kinetics import EnzymeInhibition, EnzymeKinetics
from labtools.simulators.tasks.indicator_pka import IndicatorPka
from labtools.simulators.tasks.standard_curve import StandardCurve

from labtools.session.task import Task

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
