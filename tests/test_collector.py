"""The collector paused over a lab's build: resumed after, nested blocks and a caller's own
choice left as they were, and resumed when the block raises."""

from __future__ import annotations

import gc

import pytest

from labtools.collector import paused


def test_paused_blocks_nest_and_resume_the_collector_after() -> None:
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block did not resume it
    assert gc.isenabled()
    with pytest.raises(ValueError), paused():
        raise ValueError("a build that fails")
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
