"""Units: every input path dimension-checked, pint's traps caught, conversions across prefixes."""

from __future__ import annotations

import math
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    qty,
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("37 degC", {"value": 37, "unit": "degree_Celsius"}),
        ("37 °C", {"value": 37, "unit": "degree_Celsius"}),
        ("37°C", {"value": 37, "unit": "degree_Celsius"}),
        ("-5 degree_Celsius", {"value": -5, "unit": "degree_Celsius"}),
        (" 3.7e1 degC ", {"value": 37.0, "unit": "degree_Celsius"}),
        ("310.15 K", {"value": 310.15, "unit": "kelvin"}),
    ],
)
def test_offset_temperatures_from_strings_are_read_on_every_pint(text: str, expected) -> None:
    # pint 0.26 parses "37 degC" itself, 0.24–0.25 raise OffsetUnitCalculusError; labtools
    # builds Quantity(number, unit) from a number and a unit alone, so both agree
    assert TEMPERATURE.normalize(text, "/t") == expected


def test_fahrenheit_strings_convert_to_celsius() -> None:
    out = TEMPERATURE.normalize("98.6 degF", "/t")
    assert out["unit"] == "degree_Celsius"
    assert math.isclose(out["value"], 37.0, rel_tol=1e-12)


@pytest.mark.parametrize(
    "text", ["37 degC * 2", "2 * 37 degC", "37 degC / s", "37 degC degC", "37 degC + 1 K"]
)
def test_arithmetic_with_offset_units_in_strings_is_refused_on_every_pint(text: str) -> None:
    # pint 0.26 computes "2 * 37 degC" as 74 degC; labtools refuses it on every pint
    with pytest.raises(UnitError) as err:
        TEMPERATURE.normalize(text, "/t")
    assert "offset unit" in err.value.message
    assert err.value.field == "/t"
    assert "'37 degC'" in (err.value.hint or "")


def test_a_temperature_difference_is_not_a_temperature() -> None:
    with pytest.raises(UnitError) as err:
        TEMPERATURE.normalize("37 delta_degC", "/t")
    assert err.value.field == "/t"


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
    out = VOLUME.normalize(Quantity(2, "liter"), "/v")
    assert out == {"value": pytest.approx(2e6, rel=1e-12), "unit": "microliter"}  # pint 0.24: …0002
    assert WAVELENGTH.normalize("0.6 um", "/w") == {"value": 0.6, "unit": "micrometer"}
    assert WAVELENGTH.normalize("6000 angstrom", "/w")["value"] == pytest.approx(600)


def test_a_range_compares_in_its_own_unit_with_round_off_slack_only_across_units() -> None:
    reader = Range(230, 1000, "nanometer")
    assert magnitude(Quantity(0.23, "micrometer"), "nanometer") < 230  # 229.99999999999997
    assert reader.contains(Quantity(0.23, "micrometer"))
    assert reader.contains(Quantity(1, "micrometer"))
    assert not reader.contains(Quantity(0.2299999, "micrometer"))  # 1e-7 below: refused
    assert not reader.contains(Quantity(0.229999999, "micrometer"))  # 1e-9 below: refused
    assert not reader.contains(Quantity(1000.001, "nanometer"))
    assert reader.contains(230) and not reader.contains(230 * (1 - 1e-10))  # exact in its unit
    assert not reader.contains(Quantity(math.nextafter(230, 0), "nanometer"))
    step = Range(1, 50, "nanometer")
    assert not step.contains(Quantity(0.999999999, "nanometer"))
    assert step.contains(Quantity(1, "nanometer")) and step.contains(Quantity(0.001, "micrometer"))
    for bad in (math.nan, math.inf, -math.inf, 10**400):
        assert not reader.contains(bad)
    assert not Range(0, math.inf, "microliter").contains(Quantity(1e305, "liter"))  # inf µL


def test_open_ranges_and_physical_bounds() -> None:
    assert VOLUME.bounds == Range(0, math.inf, "microliter")
    assert VOLUME.bounds.describe("milliliter") == "≥ 0 milliliter"
    assert VOLUME.bounds.contains(Quantity(0, "nanoliter"))
    assert not VOLUME.bounds.contains(Quantity(-1e-3, "nanoliter"))
    assert TEMPERATURE.bounds.contains(Quantity(0, "kelvin"))
    assert TEMPERATURE.bounds.contains(Quantity(-273.15, "degC"))
    assert not TEMPERATURE.bounds.contains(Quantity(-1, "kelvin"))
    assert TEMPERATURE.bounds.describe("kelvin") == "≥ 0 kelvin"


def test_qty_is_the_one_quantity_helper() -> None:
    assert qty(50, "microliter") == {"value": 50, "unit": "microliter"}
    assert qty(1 / 3, "microliter", decimals=3) == {"value": 0.333, "unit": "microliter"}
    ul = partial(qty, unit="microliter")
    assert ul(2.5) == {"value": 2.5, "unit": "microliter"}


def test_range_describes_itself_in_the_callers_unit() -> None:
    r = Range(0.5, 1000, "microliter")
    assert r.describe() == "0.5–1000 microliter"
    assert r.describe("milliliter") == "0.0005–1 milliliter"
    assert r.contains(0.5) and r.contains(1000) and not r.contains(1000.0001)
    assert Range(0, 7).describe() == "0–7"


_QUANTITY_TEXT = st.one_of(
    st.text(max_size=20),
    st.from_regex(r"\A[-+]?\d{1,3}(\.\d+)?(e[-+]?\d{1,4})? ?[a-zA-Z°µ/*^()._ 0-9]{0,14}\Z"),
)


@pytest.mark.parametrize("dim", list(DIMENSIONS.values()), ids=list(DIMENSIONS))
@settings(max_examples=150, deadline=None)
@given(text=_QUANTITY_TEXT, unit=_QUANTITY_TEXT)
def test_any_string_is_a_quantity_or_a_unit_error(dim, text: str, unit: str) -> None:
    # pint's parser raises TokenError, AssertionError, ZeroDivisionError … on odd text
    for value in (text, {"value": 1.5, "unit": unit}):
        try:
            out = dim.normalize(value, "/q")
        except UnitError as error:
            assert error.field in ("/q", "/q/unit") and error.hint
        else:
            assert out["unit"] in dim.units


#: pairs of units of one dimension: the range's, and the one a value comes in
UNIT_PAIRS = [
    ("nanometer", "nanometer"),
    ("nanometer", "micrometer"),
    ("nanometer", "angstrom"),
    ("microliter", "milliliter"),
    ("microliter", "nanoliter"),
    ("millisecond", "second"),
    ("degree_Celsius", "kelvin"),
    ("degree_Celsius", "degree_Fahrenheit"),
    ("kelvin", "degree_Celsius"),
]
bounds = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False)


@given(low=bounds, width=bounds, units=st.sampled_from(UNIT_PAIRS))
@settings(max_examples=300)
def test_a_range_holds_at_its_stated_edges(low: float, width: float, units: tuple) -> None:
    """Exactly at the edges: each bound is in, the next float beyond it is out (in the
    range's unit); given in another unit, each bound converted is in, and a value 1e-9 of it
    beyond (what a relative tolerance of 1e-9 let through) is out."""
    own, other = units
    limits = Range(low, low + width, own)
    for edge, outward in ((limits.low, -math.inf), (limits.high, math.inf)):
        assert limits.contains(Quantity(edge, own)) and limits.contains(edge)
        beyond = math.nextafter(edge, outward)
        assert not limits.contains(Quantity(beyond, own)) and not limits.contains(beyond)
        converted = magnitude(Quantity(edge, own), other)
        assert limits.contains(Quantity(converted, other))
        past = edge + math.copysign(max(abs(edge), 1.0) * 1e-9, outward)
        assert not limits.contains(Quantity(magnitude(Quantity(past, own), other), other))


@given(low=st.integers(-1000, 1000), width=st.integers(0, 1000))
def test_a_count_range_holds_exactly(low: int, width: int) -> None:
    counts = Range(low, low + width)
    assert counts.contains(low) and counts.contains(low + width)
    assert not counts.contains(math.nextafter(low, -math.inf))
    assert not counts.contains(math.nextafter(low + width, math.inf))
    assert not counts.contains(low - 1) and not counts.contains(low + width + 1)


def test_a_tool_holds_its_stated_limits_exactly() -> None:
    """A spectrum step of 0.999999999 nm against "allowed: 1–50 nanometer" is refused, and its
    message shows the value as given; 1 nm (or 0.001 µm) is accepted."""
    from labtools import Lab

    def step(value: float, unit: str = "nanometer") -> dict:
        return {
            "plate": "plate_1",
            "wells": ["A1"],
            "start": {"value": 400, "unit": "nanometer"},
            "stop": {"value": 402, "unit": "nanometer"},
            "step": {"value": value, "unit": unit},
        }

    with Lab.virtual(seed=0) as lab:
        lab.lh.move_plate("plate_1", "reader")
        refused = lab.call("reader_read_absorbance_spectrum", step(0.999999999))
        assert refused.error is not None and refused.error["code"] == "out_of_range"
        assert refused.error["message"] == "step 0.999999999 nanometer is outside the allowed range"
        assert refused.error["hint"] == "allowed: 1–50 nanometer"
        assert lab.call("reader_read_absorbance_spectrum", step(1)).ok
        assert lab.call("reader_read_absorbance_spectrum", step(0.001, "micrometer")).ok
