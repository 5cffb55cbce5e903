"""The README's Python example, pasted whole into Python, prints what its comments show."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"


def _pasted(source: str) -> tuple[dict[str, Any], dict[int, Any]]:
    """Run ``source`` statement by statement as the interactive interpreter does: the
    namespace, and the value each expression statement echoes, by its last line."""
    namespace: dict[str, Any] = {}
    echoed: dict[int, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr):
            code = compile(ast.Expression(node.value), str(README), "eval")
            echoed[node.end_lineno or node.lineno] = eval(code, namespace)
        else:
            exec(compile(ast.Module([node], []), str(README), "exec"), namespace)
    return namespace, echoed


def _comment_after(lines: list[str], line: int) -> str:
    """The comment on ``line`` (1-based) and the comment lines right below it, joined
    (``""``: none)."""
    text = lines[line - 1].partition("#")[2].strip()
    for below in lines[line:]:
        if not below.lstrip().startswith("#"):
            break
        text += " " + below.lstrip()[1:].strip()
    return text.strip()


def test_the_python_example_pasted_whole_prints_what_its_comments_show() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Python\n\n```python\n(.*?)```", text, re.S)
    assert block is not None
    source = block.group(1)
    lines = source.splitlines()
    namespace, echoed = _pasted(source)
    try:
        commented = {n: c for n in echoed if (c := _comment_after(lines, n))}
        refused, transfer, read = (echoed[n] for n in sorted(commented)[:3])
        first, second, third = (commented[n] for n in sorted(commented)[:3])
        assert refused == ast.literal_eval(first)  # (False, {code, message, field, hint})
        shown = dict(re.findall(r"'(\w+)': (\d+)", second))
        assert shown and {k: str(transfer[k]) for k in shown} == shown
        (value,) = re.findall(r"'values': \{'A1': ([0-9.]+)\}", third)
        assert read["values"] == {"A1": float(value)}  # the block's own read, not another
        assert (read["unit"], read["saturated"], read["over_range"]) == ("OD", [], [])
    finally:
        namespace["lab"].close()
