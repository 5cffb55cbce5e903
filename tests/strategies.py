"""Hypothesis strategies: arbitrary JSON, and arguments that follow (or nearly follow) a schema."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

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
    if kind == "integer":
        return st.integers(min_value=-3, max_value=12) | st.just(10**12)
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
def mutated(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """A conforming instance with one random change: a value replaced, a key dropped or added."""
    value = draw(conforming(schema))
    if not isinstance(value, dict) or not value:
        return draw(json_values)
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
        parent[key] = draw(json_values)
    elif action == "drop" and isinstance(parent, dict) and key is not None:
        del parent[key]
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=6))] = draw(json_values)
    return value
