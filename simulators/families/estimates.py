"""Several samples' concentrations at once, each with its standard uncertainty: the submit tool,
its checks and its log-scale score, for the families that ask for a set of samples
(``luminescence``, ``wide_range``).

A submission names the samples ``sample_1``, ``sample_2``, ... (:func:`sample_names`); it is
scored by the mean over the samples of the CRPS of a normal in ln c — centred on the estimate's
logarithm, the stated relative uncertainty its sd — against the true value's logarithm
(Gneiting et al. 2005, :func:`~labtools.simulators.tasks.standard_curve.crps_normal`), raw =
exp(−mean / scale).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from typing_extensions import TypedDict

from labtools.errors import OutOfRange
from labtools.session import Submitted
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.tool import Arg, tool
from labtools.units import Concentration, magnitude

__all__ = ["checked_estimates", "estimates_tool", "log_crps_score", "sample_names"]


def sample_names(count: int) -> tuple[str, ...]:
    """The samples as a submission names them: ``sample_1`` ... ``sample_<count>``."""
    return tuple(f"sample_{i + 1}" for i in range(count))


def estimates_tool(name: str, take: Callable[..., Any], keys: tuple[str, ...], what: str) -> Any:
    """The tool ``name``: ``concentrations`` and ``uncertainties``, one :data:`Concentration`
    per key each (TypedDicts: the portable schema profile takes no open maps), passed to the
    task's ``take`` coroutine method; ``what`` names the quantity (``"ATP concentration"``)."""

    async def submit(self: Any, concentrations: Any, uncertainties: Any) -> Submitted:
        """Submit each sample's concentration and its standard uncertainty. Ends the
        episode."""
        return await take(self, concentrations, uncertainties)

    values = TypedDict(  # type: ignore[misc]  # the functional form, keys known at run time
        "PerSampleConcentration", {k: Concentration for k in keys}
    )
    spreads = TypedDict(  # type: ignore[misc]
        "PerSampleUncertainty", {k: Concentration for k in keys}
    )
    submit.__annotations__ = {
        "concentrations": Annotated[
            values, Arg(f"Each sample's {what} (> 0), by name.", within="concentration")
        ],
        "uncertainties": Annotated[
            spreads,
            Arg("Each one's standard uncertainty (one sd, ≥ 0), by name.", within="concentration"),
        ],
        "return": Submitted,
    }
    return tool(name=name, destructive=True)(submit)


def checked_estimates(
    concentrations: Mapping[str, Any],
    uncertainties: Mapping[str, Any],
    keys: tuple[str, ...],
    unit: str,
) -> tuple[dict[str, float], dict[str, float]]:
    """Each key's concentration (finite, > 0) and uncertainty (finite, ≥ 0) in ``unit``
    (``"nanomolar"``); :class:`~labtools.errors.OutOfRange` naming the first that is not."""
    values: dict[str, float] = {}
    spreads: dict[str, float] = {}
    for key in keys:
        given = magnitude(concentrations[key], unit)
        if not (math.isfinite(given) and given > 0.0):
            raise OutOfRange(
                f"the concentration of {key} must be a finite number > 0, not {given:g} {unit}",
                field=f"/concentrations/{key}",
                hint="give each sample a positive concentration",
            )
        sd = magnitude(uncertainties[key], unit)
        if not (math.isfinite(sd) and sd >= 0.0):
            raise OutOfRange(
                f"the uncertainty of {key} must be a finite number ≥ 0, not {sd:g} {unit}",
                field=f"/uncertainties/{key}",
                hint="give one standard deviation, 0 or more",
            )
        values[key], spreads[key] = given, sd
    return values, spreads


def log_crps_score(
    values: Mapping[str, float],
    spreads: Mapping[str, float],
    truths: Mapping[str, float],
    scale: float,
) -> dict[str, float]:
    """``raw`` = exp(−mean log-CRPS / ``scale``) over ``truths``' keys (the same unit as the
    estimates), the mean itself, and each sample's estimate over its truth (``<key>_ratio``)."""
    ratios: dict[str, float] = {}
    total = 0.0
    for key, true in truths.items():
        guess = values[key]
        total += crps_normal(math.log(guess), spreads[key] / guess, math.log(true))
        ratios[f"{key}_ratio"] = guess / true
    mean = total / len(truths)
    return {"raw": math.exp(-mean / scale), "mean_log_crps": mean, **ratios}
