"""The pytest plugin users get: a seeded virtual_lab fixture and the hardware marker."""

from __future__ import annotations

pytest_plugins = ["pytester"]

USER_TESTS = """
import pytest

def test_my_protocol(virtual_lab):
    deck = virtual_lab.lh.get_deck()
    assert "reservoir:A2" in deck["labels"]
    moves = [{"source": "reservoir:A2", "destination": "plate_1:A1", "volume": "100 uL"}]
    virtual_lab.lh.transfer(moves, "tips_300ul")  # a new tip, dropped after
    assert virtual_lab.lh.get_deck()["tips_left"]["tips_300ul"] == 95

def test_fresh_per_test(virtual_lab):
    assert virtual_lab.lh.get_deck()["tips_left"]["tips_300ul"] == 96

@pytest.mark.lab_seed(7)
def test_seeded(virtual_lab):
    assert virtual_lab.shared["world"].seed == 7

@pytest.mark.hardware
def test_on_the_real_robot():
    raise AssertionError("must not run without --hardware")
"""


def test_virtual_lab_fixture_and_hardware_marker(pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, skipped=1)


def test_hardware_tests_run_with_the_flag(pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-q", "-k", "real_robot", "--hardware")
    result.assert_outcomes(failed=1)


def test_the_documented_example_passes(pytester) -> None:
    """docs/testing.md's example, as a user would save it, passes against the virtual lab."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "testing.md").read_text("utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    protocols, tests = code.split("# test_my_protocols.py\n")
    pytester.makepyfile(my_protocols=protocols, test_my_protocols=tests)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, skipped=1)
