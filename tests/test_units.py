"""Units: every input path dimension-checked, pint's traps caught, conversions across prefixes."""

from __future__ import annotations

import math

import pytest

from labtools.errors import UnitError
from labtools.units import (
    DIMENSIONS,
    FREQUENCY,
    RATE_CONSTANT,
    TEMPERATURE,
    VOLUME,
    WAVELENGTH,
    Quantity,
    Range,
    magnitude,
    ureg,
)


@pytest.mark.parametrize(
    "text",
    [
        "50 uL",
        "50uL",
        "50 µL",
        "50 μL",
        "50 ul",
        "50 microliter",
        "50 microliters",
        "50 microlitres",
        "5e1 uL",
        "0.05 mL",
        "5e-5 L",
        "50000 nL",
    ],
)
def test_spellings_of_fifty_microliters_agree(text: str) -> None:
    out = VOLUME.normalize(text, "/volume")
    q = Quantity(out["value"], out["unit"])
    assert math.isclose(magnitude(q, "microliter"), 50.0, rel_tol=1e-12)


@pytest.mark.parametrize(
    "value",
    [
        Quantity(50, "microliter"),
        {"value": 50, "unit": "uL"},
        {"value": 50, "unit": "µL"},
        {"value": 0.05, "unit": "mL"},
    ],
)
def test_python_callers_may_pass_quantities_and_dicts(value: object) -> None:
    out = VOLUME.normalize(value, "/v")
    assert math.isclose(magnitude(Quantity(out["value"], out["unit"]), "microliter"), 50.0)
    assert out["unit"] in VOLUME.units


def test_thirty_seven_c_is_coulombs_not_celsius() -> None:
    with pytest.raises(UnitError) as err:
        TEMPERATURE.normalize("37 C", "/temperature")
    assert "coulomb" in err.value.message
    assert err.value.field == "/temperature"


@pytest.mark.parametrize("text", ["37 degC", "37 °C"])
def test_offset_temperatures_from_strings_are_refused_with_the_fix(text: str) -> None:
    with pytest.raises(UnitError) as err:
        TEMPERATURE.normalize(text, "/t")
    assert "Quantity(37, 'degC')" in (err.value.hint or "")


def test_offset_temperature_built_from_parts_converts() -> None:
    out = TEMPERATURE.normalize(Quantity(37, "degC"), "/t")
    assert out == {"value": 37, "unit": "degree_Celsius"}
    assert math.isclose(magnitude(Quantity(37, "degC"), "kelvin"), 310.15)
    assert math.isclose(magnitude(Quantity(310.15, "kelvin"), "degree_Celsius"), 37.0)
    assert math.isclose(magnitude(Quantity(-40, "degF"), "degree_Celsius"), -40.0)


@pytest.mark.parametrize(
    "bad",
    [
        50,
        50.0,
        "50",
        "1 h 30 min",
        "5 mm",
        "1 OD",
        "",
        "uL",
        True,
        None,
        [50, "uL"],
        {"value": 50},
        {"value": "50", "unit": 3},
    ],
)
def test_no_unit_or_wrong_dimension_is_a_unit_error(bad: object) -> None:
    with pytest.raises(UnitError):
        VOLUME.normalize(bad, "/volume")


@pytest.mark.parametrize("text", ["10 Hz", "600 1/min"])
def test_hertz_is_refused_for_a_shaking_rate(text: str) -> None:
    # pint's revolution is 2π radian: "10 Hz" would become 95.5 rpm instead of 600.
    rpm = magnitude(Quantity(10, "hertz"), "revolutions_per_minute")
    assert math.isclose(rpm, 95.49, rel_tol=1e-3)
    with pytest.raises(UnitError):
        FREQUENCY.normalize(text, "/speed")
    expected = {"value": 600, "unit": "revolutions_per_minute"}
    assert FREQUENCY.normalize("600 rpm", "/speed") == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("120 1/min", {"value": 120, "unit": "1 / minute"}),
        ("250 s^-1", {"value": 250, "unit": "1 / second"}),
        ({"value": 3, "unit": "1 / hour"}, {"value": 3, "unit": "1 / hour"}),
        ("5 Hz", {"value": 5.0, "unit": "1 / second"}),  # hertz is 1/s in pint, no 2π
        (Quantity(0.5, "1/ms"), {"value": 500.0, "unit": "1 / second"}),
    ],
)
def test_rate_constants_take_inverse_times(given: object, expected: dict) -> None:
    assert RATE_CONSTANT.normalize(given, "/kcat") == expected


@pytest.mark.parametrize("bad", ["600 rpm", "10 rps", "5 s", "5 uM", 5, "3 uM/s"])
def test_rate_constants_refuse_rotation_rates_and_other_dimensions(bad: object) -> None:
    with pytest.raises(UnitError):
        RATE_CONSTANT.normalize(bad, "/kcat")


def test_a_bare_number_gets_no_unit_assumed() -> None:
    with pytest.raises(UnitError) as err:
        VOLUME.normalize(50, "/volume")
    assert "no unit" in err.value.message
    assert "microliter" in (err.value.hint or "")


@pytest.mark.parametrize(
    ("value", "unit", "target", "expected"),
    [
        (1, "nanoliter", "microliter", 1e-3),
        (1, "milliliter", "microliter", 1e3),
        (250, "microliter", "milliliter", 0.25),
        (0.6, "micrometer", "nanometer", 600),
        (1, "minute", "second", 60),
        (1.5, "hour", "minute", 90),
        (250, "millisecond", "second", 0.25),
        (20, "microsecond", "millisecond", 0.02),
        (0, "degree_Celsius", "kelvin", 273.15),
        (300, "kelvin", "degree_Celsius", 26.85),
        (1, "milliliter / minute", "microliter / second", 1000 / 60),
        (1, "millimolar", "micromolar", 1000),
        (250, "nanomolar", "micromolar", 0.25),
        (120, "revolutions_per_minute", "revolutions_per_second", 2),
        (1, "centimeter", "millimeter", 10),
        (60, "1 / minute", "1 / second", 1),
        (1, "1 / second", "1 / hour", 3600),
    ],
)
def test_conversions_across_prefixes(value: float, unit: str, target: str, expected: float) -> None:
    assert math.isclose(magnitude(Quantity(value, unit), target), expected, rel_tol=1e-12)
    # the cached affine map agrees with pint itself
    assert math.isclose(Quantity(value, unit).m_as(target), expected, rel_tol=1e-12)


@pytest.mark.parametrize("dim", list(DIMENSIONS.values()), ids=list(DIMENSIONS))
def test_enum_units_are_pint_names_of_the_right_dimension(dim) -> None:
    lowered = [u.lower() for u in dim.units]
    assert len(set(lowered)) == len(lowered), "no units that differ only by case"
    for unit in dim.units:
        assert str(ureg.Unit(unit)) == unit, "enum values are pint's own full names"
        assert Quantity(1, unit).check(dim.pint_dimension)
    assert dim.canonical in dim.units


def test_a_quantity_in_a_unit_outside_the_enum_is_converted_to_canonical() -> None:
    assert VOLUME.normalize(Quantity(2, "liter"), "/v") == {"value": 2e6, "unit": "microliter"}
    assert WAVELENGTH.normalize("0.6 um", "/w") == {"value": 0.6, "unit": "micrometer"}
    assert WAVELENGTH.normalize("6000 angstrom", "/w")["value"] == pytest.approx(600)


def test_range_describes_itself_in_the_callers_unit() -> None:
    r = Range(0.5, 1000, "microliter")
    assert r.describe() == "0.5–1000 microliter"
    assert r.describe("milliliter") == "0.0005–1 milliliter"
    assert r.contains(0.5) and r.contains(1000) and not r.contains(1000.0001)
    assert Range(0, 7).describe() == "0–7"
