"""Physical quantities: the process's one pint registry and the quantity types of tool arguments.

An LLM sends a quantity as ``{"value": 50, "unit": "microliter"}``, the unit drawn from an enum of
pint's full names for that dimension only. A Python caller may also pass a pint ``Quantity``, a
string such as ``"50 uL"`` or a ``{"value", "unit"}`` dict with any pint spelling. Every path is
dimension-checked; a bare number never gets a unit assumed for it.

Conversion is pint's. The hot path only caches pint's answer as an affine map per unit pair, since
``Quantity.m_as`` costs ~16 µs a call.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Annotated, Any

import pint
from typing_extensions import TypedDict

from labtools.errors import UnitError

#: pint's application registry: shared with the caller's own code, built on first use (~0.2 s)
ureg = pint.get_application_registry()


def __getattr__(name: str) -> Any:
    # ``from labtools.units import Quantity`` works, without building the registry at import.
    if name == "Quantity":
        return ureg.Quantity
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DIMENSIONS",
    "Concentration",
    "Dimension",
    "Duration",
    "FlowRate",
    "Frequency",
    "Length",
    "QuantityJSON",
    "Range",
    "RateConstant",
    "Temperature",
    "Volume",
    "Wavelength",
    "magnitude",
    "qty",
    "ureg",
]


@dataclass(frozen=True, eq=False)
class Dimension:
    """One physical dimension as tools see it.

    ``units`` is the enum offered to LLMs (pint's full names, none differing only by case);
    ``canonical`` is the unit a Python quantity outside that enum is converted to.
    """

    name: str
    pint_dimension: str
    canonical: str
    units: tuple[str, ...]
    #: a unit pint converts to this dimension with a meaning callers don't intend
    #: (hertz → revolutions per minute picks up a factor 2π)
    refused: tuple[str, ...] = ()

    def json_schema(self) -> dict[str, Any]:
        """The ``{value, unit}`` object, its unit enum this dimension's units only."""
        return {
            "type": "object",
            "properties": {
                "value": {"type": "number", "description": "Magnitude, in `unit`."},
                "unit": {"type": "string", "enum": list(self.units)},
            },
            "required": ["value", "unit"],
            "additionalProperties": False,
        }

    def from_json(self, value: float, unit: str) -> pint.Quantity:
        """Build a quantity from an already schema-checked ``{value, unit}`` pair."""
        return ureg.Quantity(value, _unit(unit))

    def normalize(self, value: object, field: str) -> dict[str, Any]:
        """Turn anything a Python caller may pass into the ``{value, unit}`` JSON form.

        Raises :class:`UnitError` when the value has no unit, the wrong dimension, or is one of
        pint's known traps (``"37 C"`` is coulombs; ``"37 degC"`` is ambiguous for pint).
        """
        if isinstance(value, pint.Quantity):
            quantity = value
        elif isinstance(value, str):
            quantity = self._parse(value, field)
        elif isinstance(value, dict) and set(value) == {"value", "unit"}:
            magnitude, unit = value["value"], value["unit"]
            if not isinstance(unit, str) or isinstance(magnitude, bool):
                raise UnitError(
                    f"{self.name} needs a numeric value and a unit name",
                    field=field,
                    hint=self.hint(),
                )
            if unit in self.units:
                return {"value": magnitude, "unit": unit}
            try:
                quantity = ureg.Quantity(magnitude, unit)
            except (pint.PintError, TypeError, ValueError) as exc:
                raise UnitError(
                    f"{unit!r} is not a unit pint knows", field=field + "/unit", hint=self.hint()
                ) from exc
        elif isinstance(value, int | float) and not isinstance(value, bool):
            raise UnitError(
                f"{value!r} has no unit; a {self.name} needs one",
                field=field,
                hint=self.hint(example=value),
            )
        else:
            raise UnitError(
                f"a {self.name} must be a quantity, not {type(value).__name__}",
                field=field,
                hint=self.hint(),
            )
        if quantity._REGISTRY is not ureg.get():
            raise UnitError(
                "the quantity comes from another pint registry",
                field=field,
                hint="build quantities with labtools.units.Quantity (pint's application registry)",
            )
        if not quantity.check(self.pint_dimension):
            raise UnitError(
                f"{value!r} is {quantity.magnitude:g} {quantity.units}, "
                f"a {_describe_dimension(quantity)}, not a {self.name}",
                field=field,
                hint=self.hint(),
            )
        unit = str(quantity.units)
        if unit in self.refused:
            raise UnitError(
                f"{unit} is ambiguous for a {self.name} (pint counts a revolution as 2π)",
                field=field,
                hint=self.hint(),
            )
        if unit in self.units:
            return {"value": _plain(quantity.magnitude), "unit": unit}
        return {"value": _plain(quantity.m_as(self.canonical)), "unit": self.canonical}

    def _parse(self, text: str, field: str) -> pint.Quantity:
        if not _LEADING_NUMBER.match(text):
            raise UnitError(f"{text!r} has no number", field=field, hint=self.hint())
        try:
            parsed = ureg.parse_expression(text)
        except pint.OffsetUnitCalculusError as exc:
            raise UnitError(
                f"{text!r} uses an offset unit, which pint cannot parse from a string",
                field=field,
                hint="pass Quantity(37, 'degC') or {'value': 37, 'unit': 'degree_Celsius'}",
            ) from exc
        except (pint.PintError, SyntaxError, TypeError, ValueError, AttributeError) as exc:
            raise UnitError(
                f"cannot read {text!r} as a quantity", field=field, hint=self.hint()
            ) from exc
        if not isinstance(parsed, pint.Quantity):
            raise UnitError(f"{text!r} has no unit", field=field, hint=self.hint())
        return parsed

    def hint(self, example: object = 50) -> str:
        return (
            f"give a {self.name} as {{'value': {example}, 'unit': '{self.canonical}'}}; "
            f"units: {', '.join(self.units)}"
        )

    # pydantic integration: the JSON schema is the {value, unit} object.
    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return self.json_schema()


_LEADING_NUMBER = re.compile(r"^\s*[-+]?(\d|\.\d)")


def _describe_dimension(quantity: pint.Quantity) -> str:
    for dim in DIMENSIONS.values():
        if quantity.check(dim.pint_dimension):
            return dim.name
    dims = str(quantity.dimensionality)
    named = {
        "[current] * [time]": "charge",
        "[mass]": "mass",
        "1 / [time]": "frequency",
        "dimensionless": "pure number",
        "[time] ** 2": "time squared",
    }
    return named.get(dims, f"quantity of {dims}")


def _plain(value: Any) -> float | int:
    """A JSON number from a pint magnitude (numpy scalars included)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return float(value)


@cache
def _unit(name: str) -> pint.Unit:
    return ureg.Unit(name)


VOLUME = Dimension("volume", "[volume]", "microliter", ("nanoliter", "microliter", "milliliter"))
LENGTH = Dimension("length", "[length]", "millimeter", ("micrometer", "millimeter", "centimeter"))
WAVELENGTH = Dimension("wavelength", "[length]", "nanometer", ("nanometer", "micrometer"))
DURATION = Dimension(
    "duration", "[time]", "second", ("microsecond", "millisecond", "second", "minute", "hour")
)
TEMPERATURE = Dimension(
    "temperature", "[temperature]", "degree_Celsius", ("degree_Celsius", "kelvin")
)
FLOW_RATE = Dimension(
    "flow rate",
    "[volume] / [time]",
    "microliter / second",
    ("microliter / second", "microliter / minute", "milliliter / minute"),
)
CONCENTRATION = Dimension(
    "concentration",
    "[concentration]",
    "micromolar",
    ("nanomolar", "micromolar", "millimolar", "molar"),
)
FREQUENCY = Dimension(
    "rotation rate",
    "[frequency]",
    "revolutions_per_minute",
    ("revolutions_per_minute", "revolutions_per_second"),
    refused=("hertz", "kilohertz", "1 / second", "1 / minute"),
)
#: a first-order rate constant or turnover number (kcat); pint counts a revolution as 2π, so
#: rotation rates are refused rather than converted with that factor
RATE_CONSTANT = Dimension(
    "rate constant",
    "1 / [time]",
    "1 / second",
    ("1 / second", "1 / minute", "1 / hour"),
    refused=("revolutions_per_minute", "revolutions_per_second"),
)

DIMENSIONS: dict[str, Dimension] = {
    d.name: d
    for d in (
        VOLUME,
        LENGTH,
        WAVELENGTH,
        DURATION,
        TEMPERATURE,
        FLOW_RATE,
        CONCENTRATION,
        FREQUENCY,
        RATE_CONSTANT,
    )
}

Volume = Annotated[pint.Quantity, VOLUME]
Length = Annotated[pint.Quantity, LENGTH]
Wavelength = Annotated[pint.Quantity, WAVELENGTH]
Duration = Annotated[pint.Quantity, DURATION]
Temperature = Annotated[pint.Quantity, TEMPERATURE]
FlowRate = Annotated[pint.Quantity, FLOW_RATE]
Concentration = Annotated[pint.Quantity, CONCENTRATION]
Frequency = Annotated[pint.Quantity, FREQUENCY]
RateConstant = Annotated[pint.Quantity, RATE_CONSTANT]


@lru_cache(maxsize=1024)
def _affine(source: pint.util.UnitsContainer, target: str) -> tuple[float, float]:
    """pint's conversion from ``source`` to ``target`` as ``y = scale * x + offset``."""
    zero = ureg.Quantity(0.0, source).m_as(target)
    one = ureg.Quantity(1.0, source).m_as(target)
    return one - zero, zero


def magnitude(quantity: pint.Quantity, unit: str) -> float:
    """The magnitude of ``quantity`` in ``unit`` (a pint unit name), as a float.

    Raises ``pint.DimensionalityError`` for incompatible units, like ``Quantity.m_as``.
    """
    scale, offset = _affine(quantity._units, unit)
    return float(quantity._magnitude) * scale + offset


class QuantityJSON(TypedDict):
    """A value in a unit."""

    value: float
    unit: str


def qty(value: float, unit: str) -> QuantityJSON:
    """A quantity for a result."""
    return {"value": value, "unit": unit}


@dataclass(frozen=True)
class Range:
    """An inclusive range of allowed values, in ``unit`` (a pint unit name; ``""`` for counts)."""

    low: float
    high: float
    unit: str = ""

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def in_unit(self, unit: str) -> tuple[float, float]:
        """The range's bounds converted to ``unit``."""
        if not self.unit or unit == self.unit:
            return self.low, self.high
        return (
            magnitude(ureg.Quantity(self.low, self.unit), unit),
            magnitude(ureg.Quantity(self.high, self.unit), unit),
        )

    def describe(self, unit: str | None = None) -> str:
        """``"230–1000 nanometer"``, in ``unit`` if given."""
        unit = unit or self.unit
        low, high = self.in_unit(unit) if unit else (self.low, self.high)
        text = f"{_fmt(low)}–{_fmt(high)}"
        return f"{text} {unit}" if unit else text


def _fmt(value: float) -> str:
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"
