"""The cyclic garbage collector paused over a burst of allocations.

Building a lab makes tens of thousands of objects (the deck alone 23,000); each few hundred
start a collection, and a full one walks every object alive, so in a process holding many labs
(a server's sessions, a shelf) a build spent most of its time in collections over the others.
Collections resume at the end, and the burst's garbage is collected then as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]


@contextmanager
def paused() -> Iterator[None]:
    """Pause the collector for the block (nested blocks and a collector the caller disabled
    stay as they were; the outermost block that paused it resumes it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
