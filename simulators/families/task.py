"""What every family's task shares: its lab (``family_lab.toml``) with the reader's noise
raised by the level, a reservoir filled per instance, and labelled certified standards."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar

import numpy as np
from typing_extensions import TypedDict

from labtools.drivers.pylabrobot.liquid_handler import PLRLiquidHandler
from labtools.lab import Lab
from labtools.session import Submitted, Task
from labtools.simulators.families.levels import Level
from labtools.simulators.families.parts import analyte
from labtools.simulators.profile import Parameter
from labtools.simulators.published import load_profile
from labtools.simulators.tasks.offers import ABSORBANCE, LIQUID
from labtools.simulators.tasks.scripting import nominal_path_cm
from labtools.simulators.world import Mixture
from labtools.tool import Arg, tool

__all__ = [
    "SAMPLE",
    "STANDARDS",
    "STOCK_UL",
    "WASTE",
    "WATER",
    "WELL_UL",
    "FamilyTask",
    "log_uniform",
    "per_candidate_tool",
    "standard",
]

#: the reservoir of ``family_lab.toml``: water, the standards' columns, the sample, waste
WATER, SAMPLE, WASTE = "reservoir:A1", "reservoir:A10", "reservoir:A11"
STANDARDS = tuple(f"reservoir:A{i}" for i in range(2, 10))
STOCK_UL = 15_000.0
WELL_UL = 200.0
#: a standard's label tolerance (1 sd): a certified reference solution [A: 1 %, the expanded
#: 2 % (k = 2) usual on a certificate of a photometric standard]
STANDARD_TOLERANCE = 0.01
#: a standard reads about this optical density diluted 1 in 10 in a 200 µL well [A]
STANDARD_OD = 1.0


class FamilyTask(Task):
    """An instance of a family (its class attributes set by the family's ``build``)."""

    lab_tools = LIQUID | ABSORBANCE

    config = "labtools.simulators:family_lab.toml"
    level: ClassVar[Level]
    #: the profile's noise figures the level's factor multiplies too, beside the absorbance
    #: noise floor (and divides the absorbance S:N by)
    noisier: ClassVar[tuple[str, ...]] = ()

    def build_lab(self, seed: int = 0, profile: Any = None) -> Lab:
        """The family's lab, its reader's noise raised by the level's factor."""
        base = load_profile(profile)
        factor = self.level.noise
        noisier = {key: base.expected(key) * factor for key in self.noisier}
        noisier |= {
            "reader.absorbance.noise_floor": base.expected("reader.absorbance.noise_floor")
            * factor,
            "reader.absorbance.snr0": base.expected("reader.absorbance.snr0") / factor,
        }
        values = {
            key: Parameter(key, base[key].unit, value, source=f"level {self.level.number}")
            for key, value in noisier.items()
        }
        return super().build_lab(seed, base.with_values(values))

    @staticmethod
    def fill_reservoir(
        lab: Lab, standards: Mapping[str, str], sample_molar: Mapping[str, float]
    ) -> None:
        """Each of ``standards`` (container → species) a certified standard
        (:func:`standard`), the sample (species → molar) at :data:`SAMPLE`, their labels on
        the containers as the liquid handler shows them (``lh_get_deck``)."""
        world = lab.shared["world"]
        for container, key in standards.items():
            world.fill_stock(standard(container, key))
        world.fill(SAMPLE, Mixture.solution(STOCK_UL, dict(sample_molar)), "sample")
        handler = lab.instruments["lh"]
        if not isinstance(handler, PLRLiquidHandler):
            raise TypeError(f"a family's lab needs a PyLabRobot liquid handler, not {handler!r}")
        handler.labels.update({c: world.labels[c] for c in (*standards, SAMPLE)})


def standard(container: str, key: str) -> dict[str, Any]:
    """A certified standard of ``key`` that reads about :data:`STANDARD_OD` diluted 1 in 10
    (library ε, nominal path): its label rounded to two significant figures, ±1 %."""
    a = analyte(key)
    exact = 10.0 * STANDARD_OD / (a.epsilon * nominal_path_cm(WELL_UL)) * 1e6
    label_um = float(f"{exact:.2g}")
    return {
        "well": container,
        "species": key,
        "concentration_uM": label_um,
        "volume_ul": STOCK_UL,
        "tolerance": STANDARD_TOLERANCE,
        "label": f"{a.name} standard {label_um:g} µM ±1 %",
    }


def log_uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    """A draw uniform in the logarithm between ``bounds``."""
    low, high = bounds
    return float(np.exp(rng.uniform(math.log(low), math.log(high))))


def per_candidate_tool(
    name: str,
    submit: Callable[..., Any],
    parameter: str,
    keys: tuple[str, ...],
    value: Any,
    arg: Arg,
) -> Any:
    """``submit`` (an async method taking ``parameter``) as the tool ``name`` whose
    ``parameter`` holds one ``value`` per candidate key: a TypedDict, as the portable schema
    profile takes no open maps, described by ``arg``."""
    shape = TypedDict(  # type: ignore[misc]  # the functional form, keys known at run time
        f"Per{parameter.title()}", {k: value for k in keys}
    )
    submit.__annotations__ = {parameter: Annotated[shape, arg], "return": Submitted}
    return tool(name=name, destructive=True)(submit)
