"""The README's Python example runs as printed, and says what it gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_python_example_runs_and_its_comments_are_what_it_gives() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Python\n\n```python\n(.*?)```", text, re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), str(README), "exec"), namespace)
    lab = namespace["lab"]
    refused = namespace["result"]
    assert refused.error == {  # type: ignore[attr-defined]
        "code": "out_of_range",
        "message": "5 milliliter is outside what any tip takes",
        "field": "/items/0/volume",
        "hint": "allowed: 0.001–1 milliliter",
    }
    read = lab.reader.read_absorbance(plate="plate_1", wavelength="426 nm", wells=["A1"])  # type: ignore[attr-defined]
    # the same well read again: the README's 0.9028 within read noise
    assert read["values"]["A1"] == pytest.approx(0.9028, abs=0.03)
    lab.close()  # type: ignore[attr-defined]
