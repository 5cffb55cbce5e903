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
import numbers
import re
import sys
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Annotated, Any

import pint
from typing_extensions import TypedDict

from labtools.errors import UnitError, brief, json_text

#: pint's application registry: shared with the caller's own code, built on first use (~0.2 s)
ureg = pint.get_application_registry()


def __getattr__(name: str) -> Any:
    # ``from labtools.units import Quantity`` works, without building the registry at import.
    if name == "Quantity":
        return ureg.Quantity
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DIMENSIONS",
    "ROUNDING",
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
    "shown",
    "ureg",
]


#: the unit round-off a range check absorbs, relative to each term of the conversion (a few
#: float epsilons): 0.23 µm is 229.99999999999997 nm, which meets a 230 nm lower limit, while
#: 0.999999999 nm (1e-9 short) stays below a 1 nm one
ROUNDING = 4 * sys.float_info.epsilon


@dataclass(frozen=True)
class Range:
    """An inclusive range of allowed values, in ``unit`` (a pint unit name; ``""`` for counts).

    ``high`` may be ``math.inf`` (no upper limit).
    """

    low: float
    high: float
    unit: str = ""

    def contains(self, value: float | pint.Quantity) -> bool:
        """Whether ``value`` lies in the range: a number in the range's own unit, or a quantity,
        which is converted to it. A number, or a quantity in the range's unit, is compared
        exactly with the stated bounds; a quantity in another unit is compared after its
        conversion, each bound widened only by the conversion's float round-off
        (:data:`ROUNDING` of each of its terms). A value that is not finite there (NaN, an
        overflow) never lies in it."""
        slack = 0.0
        try:
            if isinstance(value, pint.Quantity):
                scale, offset = _affine(value._units, self.unit)
                given = float(value._magnitude)
                value = given * scale + offset
                if scale != 1.0 or offset != 0.0:  # not the identity: round-off to absorb
                    # the terms' own, and the scale's (one minus zero, so ~ its offset's ulp)
                    terms = abs(given * scale) + abs(offset)
                    slack = ROUNDING * (terms + abs(given) * (abs(scale) + abs(offset)))
            finite = math.isfinite(value)
        except (OverflowError, TypeError):  # an int too large for a float; not a number
            return False
        if not finite:
            return False
        return self.low - slack <= value <= self.high + slack

    def in_unit(self, unit: str) -> tuple[float, float]:
        """The range's bounds converted to ``unit``."""
        if not self.unit or unit == self.unit:
            return self.low, self.high
        return (
            magnitude(ureg.Quantity(self.low, self.unit), unit),
            magnitude(ureg.Quantity(self.high, self.unit), unit),
        )

    def describe(self, unit: str | None = None) -> str:
        """``"230–1000 nanometer"`` (``"≥ 0 microliter"`` without an upper limit), in ``unit``
        if given."""
        unit = unit or self.unit
        low, high = self.in_unit(unit) if unit else (self.low, self.high)
        text = f"≥ {_fmt(low)}" if high == math.inf else f"{_fmt(low)}–{_fmt(high)}"
        return f"{text} {unit}" if unit else text


@dataclass(frozen=True, eq=False)
class Dimension:
    """One physical dimension as tools see it.

    ``units`` is the enum offered to LLMs (pint's full names, none differing only by case);
    ``canonical`` is the unit a Python quantity outside that enum is converted to; ``low`` is
    the least physically meaningful value, in ``canonical``: 0 (no negative volumes,
    concentrations, times, rates …), absolute zero for a temperature.
    """

    name: str
    pint_dimension: str
    canonical: str
    units: tuple[str, ...]
    #: a unit pint converts to this dimension with a meaning callers don't intend
    #: (hertz → revolutions per minute picks up a factor 2π)
    refused: tuple[str, ...] = ()
    low: float = 0.0

    @property
    def bounds(self) -> Range:
        """The physically meaningful values, ``low`` and up, in ``canonical``: every quantity
        argument is checked against it (tools' own limits come on top)."""
        return Range(self.low, math.inf, self.canonical)

    def json_schema(self) -> dict[str, Any]:
        """The ``{value, unit}`` object, its unit enum this dimension's units only."""
        return {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "unit": {"type": "string", "enum": list(self.units)},
            },
            "required": ["value", "unit"],
            "additionalProperties": False,
        }

    def from_json(self, value: float, unit: str) -> pint.Quantity:
        """Build a quantity from an already schema-checked ``{value, unit}`` pair."""
        return ureg.Quantity(value, _unit(unit)._units)  # the unit's container: pint's quickest

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
            if not isinstance(unit, str) or not _is_number(magnitude):
                raise UnitError(
                    f"{self.name} needs a numeric value and a unit name",
                    field=field,
                    hint=self.hint(),
                )
            if len(unit) > _LONGEST_QUANTITY:
                raise UnitError(
                    f"{brief(unit)} is too long ({len(unit)} characters) to be a unit",
                    field=field + "/unit",
                    hint=self.hint(),
                )
            if unit in self.units:
                return dict(qty(magnitude, unit))
            try:
                quantity = ureg.Quantity(magnitude, unit)
            except Exception as exc:  # pint's parser fails many ways: see _PARSE_ERRORS
                raise UnitError(
                    f"{brief(unit)} is not a unit pint knows",
                    field=field + "/unit",
                    hint=self.hint(),
                ) from exc
        elif isinstance(value, int | float) and not isinstance(value, bool):
            raise UnitError(
                f"{brief(value)} has no unit; a {self.name} needs one",
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
                f"{brief(value)} is {brief(quantity.magnitude, 24)} {quantity.units}, "
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
        try:
            if unit in self.units:
                return dict(qty(_plain(quantity.magnitude), unit))
            return dict(qty(_plain(quantity.m_as(self.canonical)), self.canonical))
        except (pint.PintError, TypeError, ValueError, OverflowError) as exc:
            # e.g. a temperature difference (delta_degC) where a temperature is meant
            raise UnitError(
                f"{brief(value)} cannot be read as a {self.name} in {self.canonical}",
                field=field,
                hint=self.hint(),
            ) from exc

    def _parse(self, text: str, field: str) -> pint.Quantity:
        """``"50 uL"`` → a quantity, by pint's expression parser; a number and an offset unit
        (``"37 degC"``, ``"-5 degree_Celsius"``) → ``Quantity(37, degC)`` directly, the same on
        every pint (0.26 parses these itself, 0.24–0.25 refuse them). Arithmetic with an offset
        unit (``"37 degC * 2"``, ``"2 * 37 degC"``) is refused on every pint."""
        if len(text) > _LONGEST_QUANTITY:
            raise UnitError(
                f"{brief(text)} is too long ({len(text)} characters) to be a quantity",
                field=field,
                hint=self.hint(),
            )
        if not _LEADING_NUMBER.match(text):
            raise UnitError(f"{brief(text)} has no number", field=field, hint=self.hint())
        offset = _offset_quantity(text)
        if offset is not None:
            return offset
        try:
            parsed = ureg.parse_expression(text)
        except pint.OffsetUnitCalculusError as exc:
            raise _offset_arithmetic(text, field) from exc
        except Exception as exc:  # pint's parser fails many ways: see _PARSE_ERRORS
            raise UnitError(
                f"cannot read {brief(text)} as a quantity", field=field, hint=self.hint()
            ) from exc
        if not isinstance(parsed, pint.Quantity):
            raise UnitError(f"{brief(text)} has no unit", field=field, hint=self.hint())
        if not parsed._is_multiplicative:  # pint 0.26 computes "2 * 37 degC"; 0.25 refuses it
            raise _offset_arithmetic(text, field)
        return parsed

    def hint(self, example: object = 50) -> str:
        """What a quantity of this dimension looks like, ``example`` as its value."""
        value = brief(example, 24)
        value = value if _JSON_NUMBER.fullmatch(value) else "50"  # not NaN, nor a cut number
        return (
            f'give a {self.name} as {{"value":{value},"unit":{json_text(self.canonical)}}}; '
            f"units: {', '.join(self.units)}"
        )

    # pydantic integration: the JSON schema is the {value, unit} object.
    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return self.json_schema()


_JSON_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_LEADING_NUMBER = re.compile(r"\s*[-+]?(\d|\.\d)")
#: a number and a unit, nothing else: ``"37 degC"``, ``"-5 degree_Celsius"``, ``"3.7e1°C"``
_NUMBER_AND_UNIT = re.compile(
    r"\s*(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>\S.*?)\s*"
)
_INTEGER = re.compile(r"[-+]?\d+")
# _PARSE_ERRORS: pint's string parser raises PintError subclasses, but also tokenize.TokenError
# ("1 (("), AssertionError ("1 **"), ZeroDivisionError ("1 uL/0"), SyntaxError, ValueError,
# AttributeError…; parsing a caller's string catches Exception and reports a UnitError.
#: characters of the longest string read as a quantity (``"12.5 microliter / minute"`` is 24)
_LONGEST_QUANTITY = 200


def _offset_quantity(text: str) -> pint.Quantity | None:
    """``Quantity(number, unit)`` if ``text`` is exactly a number and an offset unit (degC,
    degF); ``None`` for anything else, left to pint's expression parser."""
    match = _NUMBER_AND_UNIT.fullmatch(text)
    if match is None:
        return None
    try:
        unit = ureg.parse_units(match["unit"])
    except Exception:  # "degC * 2" has a scaling factor, "((" is no unit: see _PARSE_ERRORS
        return None
    quantity = ureg.Quantity(1, unit)
    if quantity._is_multiplicative:
        return None
    number = match["number"]
    return ureg.Quantity(int(number) if _INTEGER.fullmatch(number) else float(number), unit)


def _offset_arithmetic(text: str, field: str) -> UnitError:
    return UnitError(
        f"{brief(text)} does arithmetic with an offset unit (°C, °F), which is ambiguous",
        field=field,
        hint="give a number and the unit alone, e.g. '37 degC', or "
        '{"value":37,"unit":"degree_Celsius"}',
    )


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


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
    "temperature",
    "[temperature]",
    "degree_Celsius",
    ("degree_Celsius", "kelvin"),
    low=-273.15,  # absolute zero
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


def qty(value: float, unit: str, *, decimals: int | None = None) -> QuantityJSON:
    """A quantity in JSON form, ``{"value": value, "unit": unit}``: for results, and for tool
    arguments in scripts; ``decimals`` rounds the value (``round(value, decimals)``).

    The one helper: bind a unit with ``functools.partial(qty, unit="microliter")``.
    """
    if decimals is not None:
        value = round(value, decimals)
    return {"value": value, "unit": unit}


def shown(value: float) -> str:
    """``value`` as short as ``:g`` writes it, unless that would round it: ``5``, ``0.25``,
    ``0.999999999`` (never ``1``), so a message never shows a refused value as a bound."""
    try:
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    except (OverflowError, ValueError, TypeError):  # an int past a float's range
        return brief(value)


def _fmt(value: float) -> str:
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"
