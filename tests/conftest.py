"""Shared fixtures for the test suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes import fake_lab


@pytest.fixture(autouse=True, scope="session")
def _catalogue_cache(tmp_path_factory: pytest.TempPathFactory):
    """Servers the tests spawn keep their tool catalogues here, never in the user's cache."""
    import os

    os.environ["LABTOOLS_CACHE_DIR"] = str(tmp_path_factory.mktemp("labtools-cache"))
    yield


@pytest.fixture
def lab():
    """A lab of small test-only instruments (no physics)."""
    with fake_lab() as instance:
        yield instance
