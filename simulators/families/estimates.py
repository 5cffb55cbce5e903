"""Several samples' concentrations at once, each with its standard uncertainty: the submit tool,
its checks and its log-scale score, for the families that ask for a set of samples
(``luminescence``, ``wide_range``).

A submission is a list of estimates, each naming its sample ``sample_1``, ``sample_2``, ...
(:func:`sample_names`) and giving its concentration and uncertainty; it is
scored by the mean over the samples of the CRPS of a normal in ln c — centred on the estimate's
logarithm, the stated relative uncertainty its sd — against the true value's logarithm
(Gneiting et al. 2005, :func:`~labtools.simulators.tasks.standard_curve.crps_normal`), raw =
exp(−mean / scale).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict

from labtools.errors import InvalidArguments, OutOfRange
from labtools.session import Submitted
from labtools.simulators.tasks.standard_curve import crps_normal
from labtools.tool import Arg, tool
from labtools.units import Concentration, magnitude, qty

__all__ = [
    "checked_estimates",
    "estimates_tool",
    "log_crps_score",
    "sample_names",
    "submission",
]


def sample_names(count: int) -> tuple[str, ...]:
    """The samples as a submission names them: ``sample_1`` ... ``sample_<count>``."""
    return tuple(f"sample_{i + 1}" for i in range(count))


def estimates_tool(name: str, take: Callable[..., Any], keys: tuple[str, ...], what: str) -> Any:
    """The tool ``name``: ``estimates``, one item per key (its ``sample``, ``concentration`` and
    ``uncertainty``, one :data:`Concentration` schema for all samples), each key exactly once;
    passed on to the task's ``take`` coroutine method as two mappings, key → concentration and
    key → uncertainty. ``what`` names the quantity (``"ATP concentration"``)."""

    async def submit(self: Any, estimates: Any) -> Submitted:
        """Submit each sample's concentration and its standard uncertainty. Ends the
        episode."""
        concentrations, uncertainties = _by_sample(estimates, keys)
        return await take(self, concentrations, uncertainties)

    SampleEstimate = TypedDict(  # noqa: UP013  # the functional form: keys known at run time
        "SampleEstimate",
        {
            "sample": Literal[keys],  # type: ignore[valid-type]
            "concentration": Concentration,
            "uncertainty": Concentration,
        },
    )
    submit.__annotations__ = {
        "estimates": Annotated[
            Sequence[SampleEstimate],
            Arg(
                f"One per sample: its name, its {what} (> 0) and that one's standard "
                "uncertainty (one sd, ≥ 0).",
                within="concentration",
            ),
        ],
        "return": Submitted,
    }
    return tool(name=name, destructive=True)(submit)


def submission(
    keys: Sequence[str], values: Sequence[float], spreads: Sequence[float], unit: str
) -> dict[str, Any]:
    """The arguments of an :func:`estimates_tool`: each key's value and spread in ``unit``."""
    return {
        "estimates": [
            {"sample": key, "concentration": qty(value, unit), "uncertainty": qty(spread, unit)}
            for key, value, spread in zip(keys, values, spreads, strict=True)
        ]
    }


def _by_sample(
    estimates: Sequence[Mapping[str, Any]], keys: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Key → concentration and key → uncertainty (quantities the tool's range check has kept
    finite and ≥ 0); :class:`~labtools.errors.InvalidArguments` for a sample given twice or not
    at all, :class:`~labtools.errors.OutOfRange` for a concentration of 0."""
    concentrations: dict[str, Any] = {}
    uncertainties: dict[str, Any] = {}
    for i, item in enumerate(estimates):
        key = item["sample"]
        if key in concentrations:
            raise InvalidArguments(
                f"{key} is given twice", field=f"/estimates/{i}/sample", hint="one item per sample"
            )
        if not item["concentration"].magnitude > 0:
            raise OutOfRange(
                f"the concentration of {key} must be > 0",
                field=f"/estimates/{i}/concentration/value",
                hint="give each sample a positive concentration",
            )
        concentrations[key], uncertainties[key] = item["concentration"], item["uncertainty"]
    missing = [key for key in keys if key not in concentrations]
    if missing:
        raise InvalidArguments(
            f"no estimate for {', '.join(missing)}",
            field="/estimates",
            hint=f"give one item for each of {', '.join(keys)}",
        )
    return concentrations, uncertainties


def checked_estimates(
    concentrations: Mapping[str, Any],
    uncertainties: Mapping[str, Any],
    keys: tuple[str, ...],
    unit: str,
) -> tuple[dict[str, float], dict[str, float]]:
    """Each key's concentration and uncertainty in ``unit`` (``"nanomolar"``), as the tool
    has checked them: a concentration > 0, an uncertainty ≥ 0."""
    values = {key: magnitude(concentrations[key], unit) for key in keys}
    spreads = {key: magnitude(uncertainties[key], unit) for key in keys}
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
