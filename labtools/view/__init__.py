"""The live view: a lab's deck, wells, calls and clock in a browser, as the lab runs.

``with view(lab) as url:`` serves the page on loopback from a thread while the block runs a
protocol; ``open_view(lab)`` returns the running :class:`ViewServer` (``stop()`` ends it);
``open_replay(replay_journal(path))`` serves the replay of a journal, a run bundle, an episode
or an eval export's record, stepped through on the page;
``labtools view`` and ``labtools serve --view`` do the same from the command line. A session
(anything with a ``lab``) is viewed through its lab. The page is one self-contained HTML file:
it loads nothing from anywhere but the server that served it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from labtools.view.replay import Replay, ReplayError
from labtools.view.server import ViewServer
from labtools.view.sources import replay_journal

__all__ = [
    "Replay",
    "ReplayError",
    "ViewServer",
    "open_replay",
    "open_view",
    "replay_journal",
    "view",
]


def open_view(lab: Any, *, host: str = "127.0.0.1", port: int = 0) -> ViewServer:
    """Start serving the view of ``lab`` (a :class:`~labtools.Lab`, or a session's lab) on
    ``host:port`` (``port=0``: a free port); the server's ``url`` is the page."""
    target = getattr(lab, "lab", lab)
    server = ViewServer(target, host=host, port=port)
    server.start()
    return server


def open_replay(
    replay: Replay | Sequence[Replay], *, host: str = "127.0.0.1", port: int = 0
) -> ViewServer:
    """Start serving the page stepping through ``replay`` (:func:`replay_journal`), or two
    replays side by side, stepped together."""
    server = ViewServer(None, host=host, port=port, replay=replay)
    server.start()
    return server


@contextmanager
def view(lab: Any, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve the view of ``lab`` while the block runs; yields the page's URL."""
    server = open_view(lab, host=host, port=port)
    try:
        yield server.url
    finally:
        server.stop()
