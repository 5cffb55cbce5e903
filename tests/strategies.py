"""Hypothesis strategies: arbitrary JSON, and arguments that follow (or nearly follow) a schema;
and the inputs that break careless dispatchers — non-finite and huge numbers, wrong units,
unknown wells, non-string keys, deep nesting, 1 MB strings."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from labtools.units import DIMENSIONS

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)

json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def conforming(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances of a portable-profile schema (types, enums, closed objects, arrays)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return st.fixed_dictionaries({k: conforming(v) for k, v in props.items()})
    if kind == "array":
        return st.lists(conforming(schema["items"]), max_size=3)
    if kind == "integer":  # JSON Schema counts an integral number such as 2.0 an integer
        small = st.integers(min_value=-3, max_value=12)
        return small | small.map(float) | st.just(10**12)
    if kind == "number":
        return st.floats(min_value=-1e4, max_value=1e6) | st.sampled_from([0.0, 1.0, 50.0, 600])
    if kind == "string":
        return st.text(max_size=10) | st.sampled_from(
            [
                "A1",
                "plate_1",
                "tips",
                "stock:A1",
                "plate_1:A1",
                "reader",
                "site_1",
                "tips_300ul",
                "reservoir:A2",
                "cuvette",
                "plate_384",
                "plate_carrier-4",
            ]
        )
    if kind == "boolean":
        return st.booleans()
    return json_values


@st.composite
def mutated(
    draw: st.DrawFn, schema: dict[str, Any], values: st.SearchStrategy[Any] = json_values
) -> Any:
    """A conforming instance with one random change: a value replaced (by one of ``values``),
    a key dropped or added."""
    value = draw(conforming(schema))
    if not isinstance(value, dict) or not value:
        return draw(values)
    path: list[Any] = []
    node: Any = value
    while isinstance(node, dict | list) and node and draw(st.booleans()):
        key = draw(
            st.sampled_from(sorted(node))
            if isinstance(node, dict)
            else st.integers(0, len(node) - 1)
        )
        path.append(key)
        node = node[key]
    parent: Any = value
    for key in path[:-1]:
        parent = parent[key]
    action = draw(st.sampled_from(["replace", "drop", "add"]))
    if not path:
        parent, key = value, None
    else:
        key = path[-1]
    if action == "replace" and key is not None:
        parent[key] = draw(values)
    elif action == "drop" and isinstance(parent, dict) and key is not None:
        del parent[key]
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=6))] = draw(values)
    return value


def integers_as_floats(schema: dict[str, Any], value: Any) -> Any:
    """``value`` (an instance of ``schema``) with every integer the schema declares written as
    the integral float JSON may carry (``2`` → ``2.0``)."""
    kind = schema.get("type")
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return float(value) if abs(value) < 2**53 else value
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: integers_as_floats(props[k], v) if k in props else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [integers_as_floats(schema["items"], v) for v in value]
    return value


def integer_paths(schema: dict[str, Any], path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Where ``schema`` declares integers: property names, ``None`` for every array item."""
    kind = schema.get("type")
    if kind == "integer":
        return [path]
    if kind == "object":
        props = schema.get("properties", {})
        return [p for k, v in props.items() for p in integer_paths(v, (*path, k))]
    if kind == "array":
        return integer_paths(schema["items"], (*path, None))
    return []


# -- what an LLM (or a careless Python caller) sends ----------------------------------------------
MEGABYTE = 1 << 20

#: numbers JSON can carry and floats cannot, or that no quantity should take
extreme_numbers = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        1e300,
        -1e300,
        1.7976931348623157e308,
        5e-324,
        -5e-324,
        -0.0,
        -1,
        -1e-9,
        10**400,
        -(10**400),
        2**63,
    ]
)

#: strings where a number or a well belongs: numbers as text, near-miss wells, control characters
tricky_strings = st.sampled_from(
    [
        "50",
        "50 uL",
        "1e400",
        "NaN",
        "Infinity",
        "37 degC",
        "plate_1:A1\n",
        "plate_1:A1 ",
        " plate_1:A1",
        "plate_1:a1",
        "plate_1:A01",
        "plate_1:A0",
        "plate_1:I1",
        "plate_1:Z99",
        "plate_1:A1\nplate_1:A2",
        "plate_3:A1",
        "reservoir:A13",
        "reservoir:",
        ":A1",
        "A1\n",
        "\x00",
        "",
        "tips_300ul\n",
        "reader\n",
    ]
)

#: a megabyte-long name, as a well, a plate or bare
long_strings = st.sampled_from(["plate_1:", "reservoir:", ""]).map(lambda p: p + "A" * MEGABYTE)

_UNITS = sorted({u for d in DIMENSIONS.values() for u in d.units})
#: a quantity in any unit labtools knows, a pint spelling outside the enums, or no unit at all
wrong_units = st.builds(
    lambda value, unit: {"value": value, "unit": unit},
    st.one_of(st.floats(), st.integers(-(10**400), 10**400), extreme_numbers, tricky_strings),
    st.sampled_from([*_UNITS, "uL", "µL", "Microliter", "C", "degC", "hertz", "", "1/s", "M"]),
)


def _nest(depth: int, dict_levels: bool) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value} if dict_levels else [value]
    return value


#: lists or objects nested past what a recursive walker survives
deeply_nested = st.builds(_nest, st.integers(50, 3000), st.booleans())

#: objects a Python caller may build and JSON cannot: keys that are not strings
foreign_keys = st.dictionaries(
    st.one_of(st.integers(), st.none(), st.floats(), st.booleans(), st.tuples(st.integers())),
    json_values,
    min_size=1,
    max_size=3,
)

#: one bad value: any of the above, or arbitrary JSON
nasty = st.one_of(
    extreme_numbers,
    tricky_strings,
    long_strings,
    wrong_units,
    deeply_nested,
    foreign_keys,
    json_values,
)


@st.composite
def with_bad_leaf(draw: st.DrawFn, schema: dict[str, Any], values: st.SearchStrategy[Any]) -> Any:
    """A conforming instance with one leaf (a number, a string, a unit; at any depth) replaced
    by one of ``values``."""
    value = draw(conforming(schema))
    parent: Any = None
    key: Any = None
    node = value
    while isinstance(node, dict | list) and node:
        key = draw(
            st.sampled_from(sorted(node))
            if isinstance(node, dict)
            else st.integers(0, len(node) - 1)
        )
        parent, node = node, node[key]
    if parent is None:
        return draw(values)
    parent[key] = draw(values)
    return value


@st.composite
def llm_arguments(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """Arguments an LLM sends for a tool with ``schema``: valid ones, ones with one bad value
    anywhere (a number, a unit, a well, a nested object), an extra field, a non-string key, or
    something that is not arguments at all."""
    kinds = ["conforming", "leaf", "leaf", "leaf", "mutated", "extra", "foreign", "whole"]
    kind = draw(st.sampled_from(kinds))
    if kind == "conforming":
        return draw(conforming(schema))
    if kind == "leaf":
        return draw(with_bad_leaf(schema, nasty))
    if kind == "mutated":
        return draw(mutated(schema, nasty))
    value = draw(conforming(schema))
    if kind == "whole" or not isinstance(value, dict):
        return draw(nasty)
    if kind == "extra":
        value[draw(st.text(max_size=8) | long_strings)] = draw(nasty)
    else:
        value.update(draw(foreign_keys))
    return value


#: the virtual lab's tools, in catalogue order (the tests that cover every tool hold to it)
VIRTUAL_LAB_TOOLS = [
    "lh_pick_up_tips",
    "lh_drop_tips",
    "lh_aspirate",
    "lh_dispense",
    "lh_transfer",
    "lh_mix",
    "lh_move_plate",
    "lh_get_deck",
    "reader_read_absorbance",
    "reader_read_absorbance_spectrum",
    "reader_read_absorbance_kinetic",
    "reader_get_data",
    "reader_read_fluorescence",
    "reader_read_luminescence",
    "reader_set_temperature",
    "reader_stop_heating",
    "reader_get_temperature",
    "spec_set_integration_time",
    "spec_acquire_dark",
    "spec_acquire_reference",
    "spec_acquire_spectrum",
    "spec_measure_absorbance",
    "spec_get_data",
    "balance_weigh",
    "balance_tare",
    "balance_zero",
    "balance_get_info",
]
