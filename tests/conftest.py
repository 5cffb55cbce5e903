"""Shared fixtures for the test suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes import fake_lab


@pytest.fixture
def lab():
    """A lab of small test-only instruments (no physics)."""
    with fake_lab() as instance:
        yield instance
