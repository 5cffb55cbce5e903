"""A profile: every physical parameter that differs between units or models of an instrument.

Keys are dotted paths (``reader.absorbance.stray_light``,
``liquid_handler.channel_3.tip_300.beta``); a TOML profile file nests them as tables, each
parameter a table with ``value`` or ``prior``, its ``unit`` and its ``source`` or
``fitted_from``::

    name = "reader 2 in room 104"
    base = "published"                  # the profile this one lays its values over

    [reader.absorbance.gain_error]
    value = 0.0031
    unit = "dimensionless"
    ci95 = [0.0012, 0.0050]
    fitted_from = "labtools calibrate, 2026-12-02"

A key with a ``channel_<i>`` segment falls back to the key without it, so the published
profile's ``liquid_handler.tip_300.beta`` prior holds for every channel until a calibration
fixes one channel's value.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import tomli_w

from labtools.simulators.profile.parameter import KINDS, Kind, Parameter, Prior, ProfileError

__all__ = ["Profile"]

_CHANNEL = re.compile(r"\.channel_\d+(?=\.)")
_PRIOR_FIELDS = {"scale"} | {name for pair in KINDS.values() for name in pair}
_PARAMETER_FIELDS = {"value", "prior", "unit", "source", "fitted_from", "ci95"} | _PRIOR_FIELDS
_TOP = {"name", "description", "base"}


@dataclass(frozen=True)
class Profile(Mapping[str, Parameter]):
    """An immutable mapping of dotted keys to :class:`Parameter` (see the module docstring)."""

    name: str
    parameters: Mapping[str, Parameter] = field(repr=False)
    description: str = field(default="", repr=False)
    #: the file it was read from, if any
    path: Path | None = field(default=None, compare=False)

    # -- the mapping --------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Parameter:
        found = self.parameters.get(key)
        if found is None:
            general = _CHANNEL.sub("", key)
            found = self.parameters.get(general)
            if found is None:
                raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return key in self.parameters or _CHANNEL.sub("", key) in self.parameters

    def __iter__(self) -> Iterator[str]:
        return iter(self.parameters)

    def __len__(self) -> int:
        return len(self.parameters)

    def expected(self, key: str) -> float:
        """The value of ``key`` a twin predicts with (a fixed value, else the prior's mean)."""
        return self[key].expected

    # -- combining ----------------------------------------------------------------------------
    def with_values(
        self, values: Mapping[str, Parameter], *, name: str | None = None, description: str = ""
    ) -> Profile:
        """This profile with ``values`` laid over it: each a key of this profile (or a
        ``channel_<i>`` variant of one), in any unit of the same dimension."""
        merged = dict(self.parameters)
        for key, parameter in values.items():
            if key not in self:
                raise ProfileError(key, f"not a parameter of the {self.name!r} profile")
            base = self[key]
            merged[key] = parameter.in_unit(base.unit).laid_over(base)
        return Profile(name or self.name, merged, description or self.description)

    # -- files --------------------------------------------------------------------------------
    def to_toml(self, base: Profile | None = None) -> str:
        """The profile as a TOML file :func:`~labtools.simulators.profile.load_profile` reads
        back to the same values: whole (``base = "none"``), or as what differs from ``base``
        laid over it (``base = "<its name>"``: a name load_profile resolves)."""
        doc: dict[str, Any] = {"name": self.name, "base": "none" if base is None else base.name}
        if self.description:
            doc["description"] = self.description
        for key in sorted(self.parameters):
            parameter = self.parameters[key]
            if base is not None and key in base.parameters and base.parameters[key] == parameter:
                continue
            table = doc
            *parents, leaf = key.split(".")
            for part in parents:
                table = table.setdefault(part, {})
            table[leaf] = parameter.to_toml()
        return tomli_w.dumps(doc)

    def to_json(self) -> dict[str, Any]:
        """``{"name", "parameters": {key: {value | prior..., unit, ci95?, source?}}}``."""
        return {
            "name": self.name,
            "parameters": {k: self.parameters[k].to_toml() for k in sorted(self.parameters)},
        }

    @classmethod
    def from_toml(cls, text: str, *, base: Profile | None, origin: str = "profile") -> Profile:
        """Read a profile file's text; ``base`` is the profile named by its ``base`` key (the
        caller resolves names: :func:`labtools.simulators.profile.load_profile`)."""
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ProfileError("", f"{origin}: not TOML ({error})") from None
        name = doc.get("name", origin)
        if not isinstance(name, str):
            raise ProfileError("name", "must be a string")
        description = doc.get("description", "")
        read = dict(_parameters(doc, ""))
        if base is None:
            return Profile(name, read, str(description))
        return base.with_values(read, name=name, description=str(description))


def _parameters(table: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Parameter]]:
    for key, item in table.items():
        dotted = f"{prefix}{key}"
        if not prefix and key in _TOP:
            continue
        if not isinstance(item, dict):
            raise ProfileError(dotted, "expected a table (a parameter with value or prior)")
        if "value" in item or "prior" in item:
            yield dotted, _parameter(dotted, item)
        else:
            yield from _parameters(item, f"{dotted}.")


def _parameter(key: str, raw: Mapping[str, Any]) -> Parameter:
    unknown = sorted(set(raw) - _PARAMETER_FIELDS)
    if unknown:
        raise ProfileError(
            key, f"unknown field {unknown[0]!r}; fields: {sorted(_PARAMETER_FIELDS)}"
        )
    unit = raw.get("unit")
    if not isinstance(unit, str):
        raise ProfileError(key, "needs a unit (a pint unit name, 'dimensionless' for ratios)")
    text = {k: raw.get(k, "") for k in ("source", "fitted_from")}
    for name, given in text.items():
        if not isinstance(given, str):
            raise ProfileError(key, f"{name} must be a string")
    ci95 = raw.get("ci95")
    if ci95 is not None:
        if not (isinstance(ci95, list) and len(ci95) == 2):
            raise ProfileError(key, "ci95 must be [low, high]")
        ci95 = (_number(key, "ci95", ci95[0]), _number(key, "ci95", ci95[1]))
    prior = None
    if "prior" in raw:
        kind = raw["prior"]
        if not isinstance(kind, str) or kind not in KINDS:
            raise ProfileError(key, f"prior must be one of {sorted(KINDS)}, not {kind!r}")
        first, second = KINDS[kind]
        allowed = {first, second} | ({"scale"} if kind == "uniform" else set())
        extra = sorted((_PRIOR_FIELDS - allowed) & set(raw)) + (["value"] if "value" in raw else [])
        if extra:
            raise ProfileError(key, f"a {kind} prior takes {first} and {second}, not {extra[0]!r}")
        args = [_number(key, n, raw.get(n)) for n in (first, second)]
        scale = _number(key, "scale", raw.get("scale", 1.0))
        try:
            prior = Prior(cast(Kind, kind), args[0], args[1], scale)
        except ProfileError as error:
            raise ProfileError(key, str(error)) from None
    else:
        extra = sorted(_PRIOR_FIELDS & set(raw))
        if extra:
            raise ProfileError(key, f"a fixed value takes no prior field {extra[0]!r}")
    value = None if prior is not None else _number(key, "value", raw["value"])
    return Parameter(key, unit, value, prior, text["source"], text["fitted_from"], ci95)


def _number(key: str, name: str, given: Any) -> float:
    if isinstance(given, bool) or not isinstance(given, int | float):
        raise ProfileError(key, f"{name} must be a number, not {given!r}")
    if not math.isfinite(given):
        raise ProfileError(key, f"{name} must be finite, not {given!r}")
    return float(given)
