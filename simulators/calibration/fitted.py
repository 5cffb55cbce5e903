"""A calibration's result as a profile: each fitted value, with its 95 % interval, laid over the
profile the lab was twinned from (the published one by default)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from labtools.simulators.profile import Parameter, Profile, ProfileError
from labtools.simulators.published import load_profile

__all__ = ["fitted_profile"]


def fitted_profile(
    result: Mapping[str, Any], *, origin: str, base: Profile | str | None = None
) -> Profile:
    """The profile of ``result`` (``calibrate(lab)``'s shape): every entry of its
    ``parameters`` fixed at the fitted value, ``fitted_from`` saying ``origin``."""
    profile = load_profile(base)
    values = dict(
        _fitted(profile, key, entry, origin) for key, entry in result["parameters"].items()
    )
    return profile.with_values(
        values,
        name=f"fitted ({origin})",
        description=f"{len(values)} parameters fitted by {origin}, over {profile.name!r}",
    )


def _fitted(
    profile: Profile, key: str, entry: Mapping[str, Any], origin: str
) -> tuple[str, Parameter]:
    """A fitted value, or, for ``<key>_sd`` (the spread of a per-plate or per-well prior, such
    as ``reader.absorbance.well_offset_sd``), that prior rescaled to the fitted spread."""
    ci95 = (float(entry["ci95"][0]), float(entry["ci95"][1]))
    value = float(entry["value"])
    spread_of = key.removesuffix("_sd")
    if spread_of != key and spread_of in profile and not profile[spread_of].fixed:
        prior = profile[spread_of].prior
        assert prior is not None  # not fixed
        if prior.kind == "uniform" and prior.a == -prior.b and prior.scale == 1.0:
            half = math.sqrt(3.0) * value  # a uniform of that sd
            fitted = replace(prior, a=-half, b=half)
        elif prior.kind == "normal":
            fitted = replace(prior, b=value)
        else:
            raise ProfileError(key, f"cannot fit the spread of a {prior.kind} prior")
        parameter = Parameter(spread_of, profile[spread_of].unit, prior=fitted)
        return spread_of, replace(parameter, fitted_from=f"{origin}: sd {value:g}", ci95=ci95)
    return key, Parameter(key, str(entry["unit"]), value, fitted_from=origin, ci95=ci95)
