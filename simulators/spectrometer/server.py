"""Serve an OBP emulator over TCP on 127.0.0.1, for pyserial ``socket://`` and pyvisa
``TCPIP::…::SOCKET`` clients.

One thread accepts; each connection gets a thread and its own :class:`OBPSession` on the shared
device. In real-time mode a reply that carries spectra is held back until the exposure time has
passed on the wall clock since the request arrived, as on hardware; otherwise replies go out at
once (the world's clock still advances). Note that the emulator then touches the world from the
server's threads: don't drive other instruments on the same world concurrently.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable

from labtools.simulators.spectrometer.emulator import OBPEmulator

__all__ = ["OBPSocketServer"]

log = logging.getLogger(__name__)

_POLL_S = 0.05  # how often idle threads look at the stop flag


class OBPSocketServer:
    """``emulator`` on ``host:port`` (port 0: an ephemeral one). Use as a context manager, or
    :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        emulator: OBPEmulator,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        realtime: bool = False,
    ) -> None:
        self.emulator = emulator
        self.realtime = realtime
        self._host = host
        self._requested_port = port
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._connections: set[socket.socket] = set()
        self._guard = threading.Lock()

    # -- addresses -----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._listener is None:
            raise RuntimeError("the server is not running")
        return int(self._listener.getsockname()[1])

    @property
    def url(self) -> str:
        """The pyserial URL, ``socket://127.0.0.1:<port>``."""
        return f"socket://{self._host}:{self.port}"

    @property
    def visa_resource(self) -> str:
        """The VISA resource name, ``TCPIP::127.0.0.1::<port>::SOCKET``."""
        return f"TCPIP::{self._host}::{self.port}::SOCKET"

    # -- lifetime ------------------------------------------------------------------------------
    def start(self) -> OBPSocketServer:
        if self._listener is not None:
            raise RuntimeError("the server is already running")
        self._stop.clear()
        listener = socket.create_server((self._host, self._requested_port))
        listener.settimeout(_POLL_S)
        self._listener = listener
        self._spawn(self._accept_loop, "obp-accept")
        log.info("OBP emulator (%s) listening on %s", self.emulator.model.name, self.url)
        return self

    def stop(self) -> None:
        """Close the listener and every connection; wait for the threads to end."""
        if self._listener is None:
            return
        self._stop.set()
        with self._guard:
            for connection in self._connections:
                _shutdown(connection)
        for thread in self._threads:
            thread.join(timeout=5.0)
        self._listener.close()
        self._listener = None
        self._threads.clear()

    def __enter__(self) -> OBPSocketServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- threads -------------------------------------------------------------------------------
    def _spawn(self, target: Callable[..., None], name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        listener = self._listener
        while listener is not None and not self._stop.is_set():
            try:
                connection, peer = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._guard:
                self._connections.add(connection)
            log.debug("OBP emulator: connection from %s", peer)
            self._spawn(self._serve, f"obp-{peer[1]}", connection)

    def _serve(self, connection: socket.socket) -> None:
        session = self.emulator.session()
        with selectors.DefaultSelector() as selector:
            selector.register(connection, selectors.EVENT_READ)
            try:
                while not self._stop.is_set():
                    if not selector.select(_POLL_S):
                        continue
                    data = connection.recv(65536)
                    if not data:
                        break
                    arrived = time.perf_counter()
                    reply = session.feed(data)
                    exposure = session.take_exposure_s()
                    if self.realtime and exposure > 0:
                        _sleep_until(arrived + exposure, self._stop)
                    if reply:
                        connection.sendall(reply)
            except OSError as exc:
                if not self._stop.is_set():
                    log.debug("OBP emulator: connection closed: %s", exc)
            finally:
                with self._guard:
                    self._connections.discard(connection)
                connection.close()


def _sleep_until(deadline: float, stop: threading.Event) -> None:
    """Wait (on the wall clock) until ``deadline`` (perf_counter seconds) or ``stop``."""
    while (left := deadline - time.perf_counter()) > 0:
        if left > 0.002:
            if stop.wait(left - 0.001):
                return
        else:
            time.sleep(0)  # the last ~2 ms: yield rather than oversleep


def _shutdown(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
