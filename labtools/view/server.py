"""The live view's server: one page and a server-sent event stream, on loopback.

``GET /`` is the page (:file:`page.html`, package data: no script or style from anywhere
else); ``GET /events`` streams ``layout``, ``state`` and ``calls`` events as the lab changes;
``GET /state`` is the latest state as JSON. Serving a :class:`~labtools.view.replay.Replay`
instead, ``GET /replay`` is its outline (the layouts, the calls) and ``GET /replay/<k>`` its
step ``k``; the page, told so, steps through them. Two replays side by side: ``/`` shows
``/1/`` and ``/2/``, each a replay's page, stepped together. A :class:`ViewServer` runs
Starlette under uvicorn on a thread of its own, so a script, a session or an MCP server goes
on as before.

Cost to the lab: its watcher (:class:`~labtools.view.scene.Calls`) appends each call's event to
a deque. The state is read on the server's thread, only while a page is connected, at most
every :data:`MIN_INTERVAL_S` after a call and every :data:`IDLE_INTERVAL_S` otherwise, and
never more often than 20 times the time a read takes (at most 5 % of a core). Calls go to the
pages at most every :data:`MIN_INTERVAL_S` too, at most :data:`CALLS_SENT` at a time (the most
recent: a lab making thousands of calls a second shows the latest, and says how many it left
out; the journal has them all).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Sequence
from importlib.resources import files
from typing import Any

from labtools.view.replay import Replay
from labtools.view.scene import Calls, Scene

__all__ = ["CALLS_SENT", "IDLE_INTERVAL_S", "MIN_INTERVAL_S", "ViewServer"]

log = logging.getLogger(__name__)

#: the shortest time between two state reads (s): a page follows a busy lab at 5 frames a second
MIN_INTERVAL_S = 0.2
#: how often the state is read with no call (s): time passing, a session rewound, a long call
IDLE_INTERVAL_S = 1.0
#: the most calls sent to a page at a time (the most recent)
CALLS_SENT = 20
#: how often the server looks for news while a page is connected (s), and while none is
TICK_S = 0.05
IDLE_TICK_S = 0.25
#: a state read may take this share of the server's time at most
BUSY_SHARE = 0.05


class _Hub:
    """The latest state and the calls, shared by every page's stream (the server's loop)."""

    def __init__(self, lab: Any) -> None:
        self.calls = Calls()
        self.scene = Scene(lab, self.calls)
        self.unwatch = lab.watch(self.calls)
        self.state: dict[str, Any] | None = None
        self.state_text = "null"
        self.layout_text = "null"
        self.version = 0  # state reads published
        self.clients = 0
        self.closed = False
        self._seen_calls = -1  # calls when the state was last read
        self._told = 0  # calls when the streams were last woken
        self._last = 0.0
        self._gap = MIN_INTERVAL_S
        self._news: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once it runs

    def close(self) -> None:
        """Stop watching the lab and end every stream (from any thread)."""
        self.closed = True
        self.unwatch()
        loop = self.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop has just stopped
                loop.call_soon_threadsafe(self.news().set)

    def news(self) -> asyncio.Event:
        if self._news is None:
            self._news = asyncio.Event()
        return self._news

    def refresh(self, force: bool = False) -> bool:
        """Read the state if it is due; ``True`` if a new one was published."""
        now = time.perf_counter()
        calls = self.calls.count
        due = calls != self._seen_calls and now - self._last >= self._gap
        if not (force or due or now - self._last >= IDLE_INTERVAL_S):
            return False
        try:
            state, moved = self.scene.read()
        except RuntimeError:  # a container changed while it was read: next tick
            return False
        took = time.perf_counter() - now
        self._gap = max(MIN_INTERVAL_S, took / BUSY_SHARE)
        self._last, self._seen_calls = time.perf_counter(), calls
        self.state = state
        text = json.dumps(state, separators=(",", ":"), default=repr)
        if text == self.state_text and not moved:
            return False
        self.state_text = text
        if moved:
            self.layout_text = json.dumps(self.scene.layout(), separators=(",", ":"))
        self.version += 1
        event, self._news = self.news(), asyncio.Event()
        event.set()
        return True

    async def pump(self) -> None:
        """Read the state when due, while pages are connected."""
        told_at = 0.0
        while not self.closed:
            if self.clients or self.state is None:
                self.refresh(force=self.state is None)
            now = time.perf_counter()
            if self.calls.count != self._told and now - told_at >= MIN_INTERVAL_S:
                self._told, told_at = self.calls.count, now  # new calls for the log
                self.news().set()
                self._news = asyncio.Event()
            await asyncio.sleep(TICK_S if self.clients else IDLE_TICK_S)

    async def stream(self) -> AsyncIterator[str]:
        """One page's events: the layout, the state and the calls, then each change."""
        self.clients += 1
        try:
            layout_sent = state_sent = ""
            calls_seen = 0
            while not self.closed:
                news = self.news()  # before looking: a change after this wakes it
                out = []
                if self.layout_text != layout_sent:
                    layout_sent = self.layout_text
                    out.append(_event("layout", layout_sent))
                if self.state_text != state_sent:
                    state_sent = self.state_text
                    out.append(_event("state", state_sent))
                entries = self.calls.since(calls_seen, CALLS_SENT)
                if entries:
                    calls_seen = entries[-1]["n"]
                    out.append(_event("calls", json.dumps(entries, separators=(",", ":"))))
                if out:  # then wait: news while this was sent has set ``news``
                    yield "".join(out)
                try:
                    await asyncio.wait_for(news.wait(), timeout=15.0)
                except TimeoutError:
                    yield ": keep-alive\n\n"
        finally:
            self.clients -= 1


def _event(name: str, data: str) -> str:
    return f"event: {name}\ndata: {data}\n\n"


def page(mode: str = "live") -> str:
    """The page: one HTML file holding its script and style; ``mode`` ``"replay"``: it steps
    through a replay rather than following a lab; ``"pair"``: the page of two replays
    (:file:`pair.html`, their pages in frames)."""
    if mode == "pair":
        return files("labtools.view").joinpath("pair.html").read_text(encoding="utf-8")
    html = files("labtools.view").joinpath("page.html").read_text(encoding="utf-8")
    return html.replace('<body data-mode="live">', f'<body data-mode="{mode}">', 1)


class ViewServer:
    """The view of ``lab`` (or of a ``replay``, or two side by side, with ``lab=None``) served
    on ``host:port`` (``port=0``: a free one) from a thread.

    ``start()`` returns the page's URL once the server listens; ``stop()`` stops watching the
    lab and ends the server and its streams."""

    def __init__(
        self,
        lab: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        replay: Replay | Sequence[Replay] | None = None,
    ) -> None:
        replays = (replay,) if isinstance(replay, Replay) else tuple(replay or ())
        if (lab is None) == (not replays) or len(replays) > 2:
            raise ValueError("a view serves a lab, a replay or two replays")
        self.lab, self.host, self.port, self.replays = lab, host, port, replays
        self._hub: _Hub | None = None
        self._server: Any = None
        #: the thread serving the view, while it runs
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def app(self) -> Any:
        """The Starlette application (built on first use)."""
        from starlette.applications import Starlette
        from starlette.responses import HTMLResponse, Response, StreamingResponse
        from starlette.routing import Route

        if self.replays:
            return _replay_app(self.replays)
        hub = self._hub = self._hub or _Hub(self.lab)
        html = page()
        no_store = {"Cache-Control": "no-store"}

        async def index(request: Any) -> Response:
            return HTMLResponse(html, headers=no_store)

        async def events(request: Any) -> Response:
            return StreamingResponse(
                hub.stream(),
                media_type="text/event-stream",
                headers={**no_store, "X-Accel-Buffering": "no"},
            )

        async def state(request: Any) -> Response:
            return Response(hub.state_text, media_type="application/json", headers=no_store)

        @contextlib.asynccontextmanager
        async def lifespan(app: Any) -> AsyncIterator[None]:
            hub.loop = asyncio.get_running_loop()
            pump = hub.loop.create_task(hub.pump())
            try:
                yield
            finally:
                hub.closed = True
                pump.cancel()

        routes = [Route("/", index), Route("/events", events), Route("/state", state)]
        return Starlette(routes=routes, lifespan=lifespan)

    def start(self, timeout: float = 10.0) -> str:
        """Serve from a thread; the page's URL once the server listens."""
        import uvicorn

        config = uvicorn.Config(
            self.app(),
            host=self.host,
            port=self.port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,
        )
        self._server = server = uvicorn.Server(config)
        self.thread = threading.Thread(target=server.run, name="labtools-view", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the view could not listen on {self.host}:{self.port}")
            time.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        return self.url

    def stop(self) -> None:
        if self._hub is not None:
            self._hub.close()
        if self._server is not None:
            self._server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=5.0)
            self.thread = None


def _replay_app(replays: Sequence[Replay]) -> Any:
    """The page stepping through a replay, or the page showing two (``/1/``, ``/2/``)."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Mount, Route

    if len(replays) == 1:
        return Starlette(routes=_replay_routes(replays[0]))
    html = page("pair")

    async def index(request: Any) -> Response:
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    mounts = [Mount(f"/{n}", routes=_replay_routes(r)) for n, r in enumerate(replays, 1)]
    return Starlette(routes=[Route("/", index), *mounts])


def _replay_routes(replay: Replay) -> list[Any]:
    """``/`` the page, ``/replay`` the replay's outline, ``/replay/<k>`` its step ``k``."""
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    html, outline = page("replay"), replay.outline_text()
    no_store = {"Cache-Control": "no-store"}

    async def index(request: Any) -> Response:
        return HTMLResponse(html, headers=no_store)

    async def whole(request: Any) -> Response:
        return Response(outline, media_type="application/json", headers=no_store)

    async def step(request: Any) -> Response:
        k = request.path_params["k"]
        if not 0 <= k <= replay.n:
            text = json.dumps({"error": f"no step {k}: the steps are 0 to {replay.n}"})
            return Response(text, status_code=404, media_type="application/json")
        return Response(replay.step_text(k), media_type="application/json", headers=no_store)

    return [Route("/", index), Route("/replay", whole), Route("/replay/{k:int}", step)]
