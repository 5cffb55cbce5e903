"""A fault-injecting TCP proxy for OBP, between a driver and the emulator's socket server, and
a tap that counts what reached the emulator.

The proxy cuts both byte streams into OBP frames and forwards them whole, unless a fault is
armed for the next frame of a message type (``on``; ``None``: any). Faults fire once:

* on a request: ``drop_request`` (never forwarded), ``close`` (the proxy hangs up instead);
* on a reply: ``delay`` (``seconds``), ``flip`` (XOR 0xFF at ``offset``), ``truncate`` (only
  ``offset`` bytes, the connection stays), ``drop_mid_frame`` (``offset`` bytes, then it hangs
  up), ``duplicate`` (sent twice), ``garbage`` (junk bytes before it).

Each accepted connection gets its own upstream connection, so a driver that reopens its link
reaches the same device.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from labtools.drivers.ocean.protocol import HEADER, HEADER_SIZE, FramingError, bytes_remaining
from labtools.simulators.spectrometer import OBPEmulator

__all__ = ["GARBAGE", "REPLY_FAULTS", "REQUEST_FAULTS", "Fault", "OBPProxy", "Tap"]

Kind = Literal[
    "drop_request", "close", "delay", "flip", "truncate", "drop_mid_frame", "duplicate", "garbage"
]
REQUEST_FAULTS: tuple[Kind, ...] = ("drop_request", "close")
REPLY_FAULTS: tuple[Kind, ...] = (
    "delay",
    "flip",
    "truncate",
    "drop_mid_frame",
    "duplicate",
    "garbage",
)
#: junk between frames: no start marker in it
GARBAGE = b"\x00\xffnoise\x13\x37" * 4
_POLL_S = 0.05


@dataclass
class Fault:
    """One fault for the next frame of message type ``on`` (``None``: the next frame)."""

    kind: Kind
    on: int | None = None
    seconds: float = 0.0
    offset: int = 50
    fired: threading.Event = field(default_factory=threading.Event)

    @property
    def on_request(self) -> bool:
        return self.kind in REQUEST_FAULTS


class _Frames:
    """Cuts a byte stream into OBP frames (bytes that cannot start one pass through alone)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        out = []
        while len(self._buffer) >= HEADER_SIZE:
            try:
                size = HEADER_SIZE + bytes_remaining(bytes(self._buffer[:HEADER_SIZE]))
            except FramingError:
                out.append(bytes(self._buffer[:1]))
                del self._buffer[:1]
                continue
            if len(self._buffer) < size:
                break
            out.append(bytes(self._buffer[:size]))
            del self._buffer[:size]
        return out


def _message_type(frame: bytes) -> int | None:
    return HEADER.unpack(frame[:HEADER_SIZE])[4] if len(frame) >= HEADER_SIZE else None


class OBPProxy:
    """Listens on 127.0.0.1 (``port`` 0: ephemeral) and forwards to ``upstream_port``."""

    def __init__(self, upstream_port: int, *, port: int = 0) -> None:
        self.upstream_port = upstream_port
        self._requested_port = port
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: set[socket.socket] = set()
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        #: request frames forwarded to the device, by message type
        self.forwarded: Counter[int] = Counter()
        self.connections = 0

    @property
    def port(self) -> int:
        if self._listener is None:
            raise RuntimeError("the proxy is not running")
        return int(self._listener.getsockname()[1])

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def arm(self, kind: Kind, on: int | None = None, **options: Any) -> Fault:
        """Arm one fault (see the module docstring); returns it (``fault.fired`` is set once
        it has acted)."""
        fault = Fault(kind, on, **options)
        with self._lock:
            self._faults.append(fault)
        return fault

    # -- lifetime ------------------------------------------------------------------------------
    def start(self) -> OBPProxy:
        self._stop.clear()
        listener = socket.create_server(("127.0.0.1", self._requested_port))
        listener.settimeout(_POLL_S)
        self._listener = listener
        self._requested_port = self.port  # a restart listens on the same port
        self._spawn(self._accept)
        return self

    def stop(self) -> None:
        """Stop listening and hang up every connection."""
        if self._listener is None:
            return
        self._stop.set()
        self.hang_up()
        for thread in self._threads:
            thread.join(timeout=5.0)
        self._threads.clear()
        self._listener.close()
        self._listener = None

    def hang_up(self) -> None:
        """Close every open connection (both sides)."""
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> OBPProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- threads -------------------------------------------------------------------------------
    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None and not self._stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(_POLL_S)
            with self._lock:
                self._sockets.update((client, upstream))
                self.connections += 1
            pair = (client, upstream)
            self._spawn(self._pump, client, upstream, True, pair)
            self._spawn(self._pump, upstream, client, False, pair)

    def _take(self, frame: bytes, requests: bool) -> Fault | None:
        kind = _message_type(frame)
        with self._lock:
            for fault in self._faults:
                if fault.on_request == requests and fault.on in (None, kind):
                    self._faults.remove(fault)
                    return fault
        return None

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        requests: bool,
        pair: tuple[socket.socket, socket.socket],
    ) -> None:
        frames = _Frames()
        try:
            while not self._stop.is_set():
                try:
                    data = source.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                for frame in frames.feed(data):
                    if not self._forward(frame, sink, requests):
                        return
        except OSError:
            pass
        finally:
            self._close(pair)

    def _forward(self, frame: bytes, sink: socket.socket, requests: bool) -> bool:
        """Send ``frame`` on, faulted if a fault is armed; False once the proxy hung up."""
        fault = self._take(frame, requests) if len(frame) >= HEADER_SIZE else None
        kind = None if fault is None else fault.kind
        out = [frame]
        if kind == "drop_request" or kind == "close":
            out = []
        elif kind == "delay" and fault is not None:
            deadline = time.monotonic() + fault.seconds
            while not self._stop.is_set() and time.monotonic() < deadline:
                time.sleep(0.01)
        elif kind == "flip" and fault is not None:
            damaged = bytearray(frame)
            damaged[fault.offset % len(frame)] ^= 0xFF
            out = [bytes(damaged)]
        elif kind in ("truncate", "drop_mid_frame") and fault is not None:
            out = [frame[: fault.offset]]
        elif kind == "duplicate":
            out = [frame, frame]
        elif kind == "garbage":
            out = [GARBAGE + frame]
        for chunk in out:
            sink.sendall(chunk)
        if requests and kind is None:
            message_type = _message_type(frame)
            if message_type is not None:
                with self._lock:
                    self.forwarded[message_type] += 1
        if fault is not None:
            fault.fired.set()
        return kind not in ("close", "drop_mid_frame")

    def _close(self, pair: tuple[socket.socket, socket.socket]) -> None:
        for sock in pair:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with self._lock:
                self._sockets.discard(sock)


@dataclass(frozen=True)
class Answered:
    """One request the emulator answered, with the device's settings as it answered."""

    message_type: int
    regarding: int
    data: bytes
    integration_us: int
    scans_to_average: int
    light: bool


class Tap:
    """Records every request that reached ``emulator`` (wraps its ``answer``)."""

    def __init__(self, emulator: OBPEmulator) -> None:
        self.emulator = emulator
        self.answered: list[Answered] = []
        self._answer = emulator.answer
        emulator.answer = self._record  # type: ignore[method-assign]

    def _record(self, request: Any) -> Any:
        reply, exposed = self._answer(request)
        device = self.emulator
        self.answered.append(
            Answered(
                request.message_type,
                request.regarding,
                b"" if reply is None else reply.data,
                device.integration_us,
                device.scans_to_average,
                device.lamp_on and device.shutter_open,
            )
        )
        return reply, exposed

    def count(self, message_type: int) -> int:
        return sum(a.message_type == message_type for a in self.answered)

    def last(self, message_type: int) -> Answered:
        return [a for a in self.answered if a.message_type == message_type][-1]
