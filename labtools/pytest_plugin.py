"""pytest plugin (entry point ``pytest11``): test your lab code against the virtual lab.

- ``virtual_lab``: a fresh, seeded :class:`labtools.Lab` per test (seed from ``--lab-seed``,
  default 0; a test may ask for another with ``@pytest.mark.lab_seed(7)``).
- ``@pytest.mark.hardware``: the test needs real instruments; skipped unless ``--hardware``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from labtools.lab import Lab


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labtools")
    group.addoption(
        "--hardware",
        action="store_true",
        default=False,
        help="run tests marked 'hardware' (they drive real instruments)",
    )
    group.addoption(
        "--lab-seed",
        type=int,
        default=0,
        help="seed of the virtual_lab fixture's hidden truth (default 0)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hardware: needs real instruments; run with --hardware")
    config.addinivalue_line("markers", "lab_seed(n): seed for the virtual_lab fixture")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--hardware"):
        return
    skip = pytest.mark.skip(reason="needs real instruments (run with --hardware)")
    for item in items:
        if "hardware" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def virtual_lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    """A fresh virtual lab for this test, seeded; closed afterwards."""
    from labtools.lab import Lab

    marker = request.node.get_closest_marker("lab_seed")
    seed = int(marker.args[0]) if marker else int(request.config.getoption("--lab-seed"))
    lab = Lab.virtual(seed=seed)
    try:
        yield lab
    finally:
        lab.close()
