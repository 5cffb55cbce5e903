"""The lab a server serves: ready, or still being built on a thread while the server answers.

``labtools serve`` answers ``initialize`` and ``tools/list`` from a cached catalogue, and builds
the lab (imports, configuration, instruments) from its first ``tools/list`` answer or the first
request that needs the lab, whichever comes first; every request that needs the lab waits for
it. A lab that cannot be built fails those requests with the reason, and the server stays up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

from labtools.errors import InstrumentError
from labtools.host import ToolHost

__all__ = ["LabSlot"]

log = logging.getLogger(__name__)


class LabSlot:
    """A :class:`~labtools.host.ToolHost` now (:meth:`ready`) or later (:meth:`building`)."""

    def __init__(self, future: Future[ToolHost], begin: Callable[[], None] | None = None) -> None:
        self._future = future
        self._begin = begin
        self._begun = threading.Lock()

    @classmethod
    def ready(cls, lab: ToolHost) -> LabSlot:
        future: Future[ToolHost] = Future()
        future.set_result(lab)
        return cls(future)

    @classmethod
    def building(cls, build: Callable[[], ToolHost], *, deferred: bool = False) -> LabSlot:
        """Run ``build`` on a daemon thread; the slot holds its lab, or the error it raised.
        ``deferred``: only from :meth:`start` (or the first :meth:`get`), so that a server
        answering ``tools/list`` from a cached catalogue does not share the interpreter with
        the build while it starts."""
        future: Future[ToolHost] = Future()

        def run() -> None:
            try:
                future.set_result(build())
            except BaseException as exc:  # kept for every request that needs the lab
                log.error("the lab could not be built: %s", exc)
                future.set_exception(exc)

        def begin() -> None:
            threading.Thread(target=run, daemon=True, name="labtools-build").start()

        slot = cls(future, begin)
        if not deferred:
            slot.start()
        return slot

    def start(self) -> None:
        """Begin a deferred build (once; a slot that is ready or building already ignores it)."""
        with self._begun:
            begin, self._begin = self._begin, None
        if begin is not None:
            begin()

    def on_ready(self, callback: Callable[[ToolHost], None]) -> None:
        """Call ``callback(lab)`` once the lab is built (at once if it is; on the builder's
        thread otherwise); not at all if the build failed."""

        def done(future: Future[ToolHost]) -> None:
            if future.exception() is None:
                callback(future.result())

        self._future.add_done_callback(done)

    async def get(self) -> ToolHost:
        """The lab, once built; :class:`~labtools.errors.InstrumentError` if it could not be."""
        self.start()
        if not self._future.done():
            await asyncio.wait([asyncio.wrap_future(self._future)])  # returns, never raises
        error = self._future.exception()
        if error is not None:
            raise InstrumentError(
                f"the lab could not be opened: {type(error).__name__}: {error}"[:300],
                hint="fix the lab (configuration, connections) and restart the server; its "
                "log on stderr has the details",
            )
        return self._future.result()

    def close(self) -> None:
        """Close the lab, waiting for a build still under way (none that never began)."""
        with self._begun:
            if self._begin is not None:
                return
        try:
            lab = self._future.result()
        except BaseException:
            return
        close = getattr(lab, "close", None)
        if close is not None:
            close()
