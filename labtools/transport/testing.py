"""A strict scripted transport for driver tests (after PyMeasure's ``expected_protocol``).

```python
with expected_protocol([(b"WAV 600\\n", b"OK\\n"), (b"WAV?\\n", b"600\\n")]) as transport:
    driver = MyDriver(transport)
    ...
```

Each pair is ``(bytes the driver must write, bytes the device replies)``. The transport fails —
with :class:`ProtocolMismatch`, an ``AssertionError`` — on a write that differs from the next
expected one, a read with no reply pending, a write while a reply is still unread, and (when the
block ends) on pairs never used or a reply never read. A failure is also kept and raised again when
the block exits, so a driver that swallows the first one cannot hide it.

Special pairs: ``(None, reply)`` — the device sends ``reply`` unprompted; ``(written, None)`` —
the device answers nothing (a read then fails); ``(written, TIMEOUT)`` — the device stays silent
and the next read times out (raises :class:`~labtools.errors.Timeout`), to test timeout handling.
``discard_input()`` drops the pending reply and any unprompted replies next in the script (a late
reply after a timeout: ``(cmd, TIMEOUT), (None, late_reply)``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from labtools.transport.base import Transport

__all__ = ["TIMEOUT", "ProtocolMismatch", "ProtocolTransport", "expected_protocol"]


class _Silence:
    def __repr__(self) -> str:
        return "TIMEOUT"


#: reply marker: the device stays silent, so the driver's next read times out
TIMEOUT: Final = _Silence()

Reply = bytes | _Silence | None
Pair = tuple[bytes | None, Reply]


class ProtocolMismatch(AssertionError):
    """The driver's traffic departed from the expected protocol."""


class ProtocolTransport(Transport):
    """Replays ``pairs`` strictly (see the module docstring). Never waits on the clock."""

    blocking = False

    def __init__(self, pairs: Iterable[Pair], *, timeout: float = 1.0) -> None:
        super().__init__(timeout=timeout, label="expected-protocol")
        self._pairs: deque[Pair] = deque(_checked(pairs))
        self._step = 0
        self._partial = bytearray()
        self._pending = bytearray()
        self._silent = False
        self.failures: list[ProtocolMismatch] = []

    def _fail(self, message: str) -> ProtocolMismatch:
        error = ProtocolMismatch(f"exchange {self._step + 1}: {message}")
        self.failures.append(error)
        return error

    def _write(self, data: bytes) -> None:
        if self._pending:
            raise self._fail(f"wrote {data!r} while the reply {bytes(self._pending)!r} was unread")
        self._silent = False
        if not self._pairs or self._pairs[0][0] is None:
            expected = "nothing (the device speaks first)" if self._pairs else "no more traffic"
            raise self._fail(f"wrote {data!r}; expected {expected}")
        expected_bytes = self._pairs[0][0]
        sent = self._partial + data
        if not expected_bytes.startswith(sent):
            self._partial.clear()
            raise self._fail(f"wrote {bytes(sent)!r}; expected {expected_bytes!r}")
        if len(sent) < len(expected_bytes):
            self._partial = sent
            return
        self._partial.clear()
        self._answer()

    def _answer(self) -> None:
        _, reply = self._pairs.popleft()
        self._step += 1
        if isinstance(reply, _Silence):
            self._silent = True
        elif reply:
            self._pending += reply

    def _read(self, size: int) -> bytes:
        if not self._pending:
            if self._silent:
                self._silent = False
                return b""
            if self._pairs and self._pairs[0][0] is None and not self._partial:
                self._answer()
            else:
                raise self._fail("read with no reply pending")
        out = bytes(self._pending[:size])
        del self._pending[:size]
        return out

    def _read_exactly(self, size: int) -> bytes:
        out = bytearray()
        while len(out) < size:
            chunk = self._read(size - len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def _discard_input(self) -> int:
        # unprompted replies next in the script have arrived by now: they are dropped too
        while self._pairs and self._pairs[0][0] is None and not self._partial:
            self._answer()
        self._silent = False
        dropped = len(self._pending)
        self._pending.clear()
        return dropped

    def _close(self) -> None:
        pass

    def check(self) -> None:
        """Raise the first failure seen, or one for unfinished business."""
        if self.failures:
            raise self.failures[0]
        if self._partial:
            raise self._fail(f"wrote only {bytes(self._partial)!r} of {self._pairs[0][0]!r}")
        if self._pending:
            raise self._fail(f"reply {bytes(self._pending)!r} never read")
        if self._pairs:
            left = ", ".join(repr(p) for p in list(self._pairs)[:3])
            more = " …" if len(self._pairs) > 3 else ""
            raise self._fail(f"{len(self._pairs)} expected exchanges never happened: {left}{more}")


@contextmanager
def expected_protocol(
    pairs: Sequence[Pair], *, timeout: float = 1.0
) -> Iterator[ProtocolTransport]:
    """A :class:`ProtocolTransport` over ``pairs``, checked when the block exits."""
    transport = ProtocolTransport(pairs, timeout=timeout)
    try:
        yield transport
    except BaseException as exc:
        if transport.failures and exc is not transport.failures[0]:
            raise transport.failures[0] from exc
        raise
    transport.check()


def _checked(pairs: Iterable[Pair]) -> Iterator[Pair]:
    for index, pair in enumerate(pairs):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"pair {index}: expected (written, reply), got {pair!r}")
        written, reply = pair
        if written is not None and not isinstance(written, bytes | bytearray):
            raise TypeError(f"pair {index}: written must be bytes or None, got {written!r}")
        if written is not None and not written:
            raise ValueError(f"pair {index}: written bytes must not be empty")
        if reply is not None and not isinstance(reply, bytes | bytearray | _Silence):
            raise TypeError(f"pair {index}: reply must be bytes, None or TIMEOUT, got {reply!r}")
        if written is None and not isinstance(reply, bytes | bytearray):
            raise ValueError(f"pair {index}: an unprompted reply must be bytes")
        yield (
            None if written is None else bytes(written),
            bytes(reply) if isinstance(reply, bytes | bytearray) else reply,
        )
