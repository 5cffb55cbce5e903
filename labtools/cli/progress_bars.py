"""Progress bars on the command line: tqdm's, on stderr, drawn only where stderr is a terminal
(tqdm's own test), so piped and logged output stays as it was."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from labtools.progress import ProgressCallback

__all__ = ["calls_bar", "episodes_bar", "printing", "tool_bar"]

#: every bar: on a terminal only (tqdm draws one anywhere by default), cleared when done (the
#: command's own output stays), as wide as the terminal
_SHOWN: dict[str, Any] = {"disable": None, "leave": False, "dynamic_ncols": True}


@contextmanager
def episodes_bar(description: str, **options: Any) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback drawing episodes done (an
    :class:`~labtools.session.pool.EpisodePool`'s ``progress``); a new bar for each run of
    episodes, each closed when its last is done. ``options`` go to tqdm (``file``,
    ``disable``, ``mininterval``, …)."""
    current: list[Any] = []

    def report(done: int, total: int) -> None:
        if not current or done == 0:
            _close(current)
            current.append(
                tqdm(total=total, desc=description, unit="episode", **(_SHOWN | options))
            )
        bar = current[-1]
        bar.update(done - bar.n)
        if done >= total:
            _close(current)

    try:
        yield report
    finally:
        _close(current)


@contextmanager
def tool_bar(name: str, **options: Any) -> Iterator[ProgressCallback]:
    """A progress listener for one long tool call (:meth:`labtools.Lab.acall`'s
    ``progress``): the instrument's ``(done, total, message)`` reports as a bar. ``options``
    go to tqdm."""
    bar = tqdm(desc=name, **(_SHOWN | options))

    async def report(done: float, total: float | None, message: str | None) -> None:
        if total is not None and bar.total != total:
            bar.reset(total=total)
        bar.update(done - bar.n)
        if message:
            bar.set_postfix_str(message, refresh=False)
        bar.refresh()

    try:
        yield report
    finally:
        bar.close()


@contextmanager
def calls_bar(lab: Any, description: str, **options: Any) -> Iterator[None]:
    """A count of the calls ``lab`` makes inside the block (:meth:`labtools.Lab.watch`), with
    the virtual clock, for a run of unknown length (a calibration). ``options`` go to tqdm."""
    bar = tqdm(desc=description, unit="call", **(_SHOWN | options))

    def count(event: dict[str, Any]) -> None:
        bar.update(1)
        clock = event.get("virtual_time_s")
        if isinstance(clock, int | float):
            bar.set_postfix_str(f"virtual {clock / 3600:.2f} h", refresh=False)

    unwatch = lab.watch(count)
    try:
        yield
    finally:
        unwatch()
        bar.close()


@contextmanager
def printing() -> Iterator[None]:
    """Lines printed inside the block go above any bar, which is drawn again after."""
    with tqdm.external_write_mode():
        yield


def _close(bars: list[Any]) -> None:
    while bars:
        bars.pop().close()
