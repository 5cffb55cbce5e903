"""The instrument a seed draws: every per-seed prior of a profile fixed at the value one virtual
lab drew, so ``Lab.virtual(s, profile=drawn_profile(t))`` is lab ``t``'s instruments with seed
``s``'s noise and samples, and with ``s == t`` reads exactly what ``Lab.virtual(t)`` reads.

Per-plate parameters (a plate's plastic and its wells) stay priors: a new plate draws them anew.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import fields
from typing import Any

from labtools.simulators.pipetting import ChannelModel, tip_key
from labtools.simulators.plate_reading.params import TRUTH_KEYS, ReaderTruth
from labtools.simulators.profile import Parameter, Profile
from labtools.simulators.published import load_profile

__all__ = ["drawn_profile", "drawn_values"]

#: a ChannelModel field's key segment
_CHANNEL_FIELDS = {"beta": "beta", "delta_ul": "delta", "a_ul": "a", "c": "c"}
_SPECTROMETER = {
    "wavelength_offset_nm": "wavelength_offset",
    "wavelength_tilt_nm": "wavelength_tilt",
    "stray_light_600nm": "stray_light_600nm",
}
_HIDDEN_CHANNEL = re.compile(r"lh/channel(\d+)/([\d.]+)ul")


def drawn_values(hidden: Mapping[str, Any]) -> dict[str, float]:
    """Profile keys and values of a world's instrument draws (``World.hidden_truth()``)."""
    return dict(_values(hidden))


def _values(hidden: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    for name, value in hidden.items():
        channel = _HIDDEN_CHANNEL.fullmatch(name)
        if channel:
            model = ChannelModel.from_dict(value)
            prefix = f"liquid_handler.channel_{channel[1]}.{tip_key(model.tip_ul)}"
            for field, segment in _CHANNEL_FIELDS.items():
                yield f"{prefix}.{segment}", getattr(model, field)
        elif name == "lh/film_fraction":
            yield "liquid_handler.film_fraction", float(value)
        elif isinstance(value, ReaderTruth):
            for f in fields(ReaderTruth):
                yield TRUTH_KEYS[f.name], getattr(value, f.name)
        elif name.startswith("batch/"):
            key = name.removeprefix("batch/")
            factor, shift = value
            yield f"species.{key}.lot.epsilon_factor", float(factor)
            yield f"species.{key}.lot.shift", float(shift)
        else:
            own = name.partition("/")[2]
            if own in _SPECTROMETER:
                yield f"spectrometer.{_SPECTROMETER[own]}", float(value)


def drawn_profile(seed: int, base: Profile | str | None = None) -> Profile:
    """The instruments of ``Lab.virtual(seed, profile=base)`` as a profile of fixed values."""
    from labtools.lab import Lab

    profile = load_profile(base)
    lab = Lab.virtual(seed, profile=profile)
    world = lab.shared["world"]
    _ = lab.shared["reader_backend"].truth  # else drawn at the first read
    note = f"drawn from the {profile.name!r} profile with seed {seed}"
    values = {
        key: Parameter(key, profile[key].unit, value, fitted_from=note)
        for key, value in drawn_values(world.hidden_truth()).items()
    }
    lab.close()
    return profile.with_values(
        values,
        name=f"{profile.name}, seed {seed}",
        description=f"A plausible instrument set: every per-unit prior of {profile.name!r} {note}",
    )
