"""``SICSBalance``: a Mettler Toledo balance speaking MT-SICS, behind the labtools balance tools.

Layering (as the Ocean driver's): this facade → the model record (:mod:`.models`) → command
declarations (:mod:`.commands`) → line framing (:mod:`.protocol`) → a
:class:`~labtools.transport.Transport` (pyserial: a balance's RS-232 or USB-serial port, by
default 9600 baud, 8 data bits, no parity, 1 stop bit; or a TCP socket).

The constructor does no I/O. :meth:`setup` connects, sends ``@`` (cancel whatever was in
progress; the balance answers with its serial number) and ``I2`` (type and capacity).
Commands go one at a time and each waits for its answer, as the reference manual asks of hosts
(several commands in succession without waiting may be confused or ignored). Every answer that
is not "done" becomes a typed labtools error, and the balance has changed nothing:

- ``I`` (not executable now: busy, or no stability within the balance's timeout) →
  ``timeout`` for commands that wait for stability, ``busy`` otherwise;
- ``+`` / ``-`` (overload / underload; for tare and zero, beyond their range) →
  ``precondition_failed``;
- ``ES`` (command not recognised: the balance lacks that MT-SICS level) → ``not_supported``;
  ``EL`` (cannot be executed) → ``precondition_failed``; ``ET`` (transmission error) and
  lines that are not MT-SICS → ``instrument_error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from labtools.drivers.mettler import commands as c
from labtools.drivers.mettler.models import BalanceModel, get_model
from labtools.drivers.mettler.protocol import (
    GENERAL_ERRORS,
    TERMINATOR,
    Response,
    SICSFormatError,
    parse,
)
from labtools.errors import (
    Busy,
    InstrumentError,
    NotConnected,
    NotSupported,
    PreconditionFailed,
    Timeout,
)
from labtools.instruments.balance import (
    Balance,
    BalanceIdentity,
    BalanceLimits,
    BalanceSnapshot,
    Weighing,
)
from labtools.transport import Transport, check_transport, make_transport

__all__ = ["SICSBalance"]

log = logging.getLogger(__name__)
T = TypeVar("T")
#: longest answer line accepted (the longest MT-SICS answers here are tens of characters)
MAX_LINE = 256
_GRAMS = {"g": 1.0, "mg": 1e-3, "kg": 1e3}


class SICSBalance(Balance):
    """A Mettler Toledo balance over MT-SICS (levels 0 and 1).

    ``transport``: a :class:`~labtools.transport.Transport`, a URI (``"/dev/ttyUSB0"``,
    ``"socket://10.0.0.7:4001"``) or a mapping ``{"uri": …, "baudrate": …}``; one given as an
    object stays the caller's, one opened from a URI or mapping is closed by :meth:`stop`.
    ``model``: a key of :data:`~labtools.drivers.mettler.models.MODELS` (readability and the
    stable-reading timeout; type and capacity are read from the balance). ``timeout``: seconds
    to wait for an immediate answer; a stable one may take the model's ``stable_timeout_s``.
    """

    def __init__(
        self,
        name: str,
        transport: Transport | str | Mapping[str, Any],
        model: str = "XPR205",
        *,
        timeout: float = 1.0,
    ) -> None:
        self.model: BalanceModel = get_model(model)
        super().__init__(name, BalanceLimits(self.model.capacity_g, self.model.readability_g))
        check_transport(transport)  # a URI of no known kind fails when the lab loads
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self._transport_spec = transport
        self._owns_transport = not isinstance(transport, Transport)
        self._timeout = float(timeout)
        self._transport: Transport | None = None
        self.serial_number: str | None = None
        self.balance_type: str | None = None
        self.capacity_g: float = self.model.capacity_g

    # -- lifetime ------------------------------------------------------------------------------
    @property
    def transport(self) -> Transport | None:
        if self._transport is not None:
            return self._transport
        spec = self._transport_spec
        return spec if isinstance(spec, Transport) else None

    async def setup(self) -> None:
        """Connect unless connected; reset the balance (``@``) and read its type (``I2``)
        unless known."""
        if self._transport is None:
            spec = self._transport_spec
            self._transport = (
                spec
                if isinstance(spec, Transport)
                else await asyncio.to_thread(make_transport, spec, timeout=self._timeout)
            )
        if self.serial_number is not None:
            return
        try:
            await self._io(self._identify)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        transport, self._transport = self._transport, None
        self.serial_number = None
        if transport is not None and self._owns_transport:
            with contextlib.suppress(Exception):
                transport.close()

    def _identify(self) -> None:
        reset = self._request(c.RESET)
        serial = _one_text(reset, c.RESET)
        kind = _one_text(self._request(c.IDENTIFY_TYPE), c.IDENTIFY_TYPE)
        self.balance_type, self.capacity_g = _type_and_capacity(kind, self.model)
        self.serial_number = serial
        self._tare_g = None  # "@" cleared the balance's tare memory
        log.info("%s: %s serial %s, %g g", self.name, self.balance_type, serial, self.capacity_g)

    # -- episodes ------------------------------------------------------------------------------
    def restore(self, snapshot: BalanceSnapshot) -> None:
        """The front end as at ``snapshot``; the balance is identified (and reset) again at the
        next setup, as a virtual balance rewound to a new seed is a new instrument."""
        super().restore(snapshot)
        self.serial_number = None

    def state(self) -> dict[str, Any]:
        return {**super().state(), "model": self.balance_type, "serial_number": self.serial_number}

    # -- driver hooks --------------------------------------------------------------------------
    async def _weigh(self, *, stable: bool) -> Weighing:
        command = c.WEIGH if stable else c.WEIGH_IMMEDIATELY
        return _weighing(await self._io(self._request, command), command)

    async def _tare(self, *, stable: bool) -> Weighing:
        command = c.TARE if stable else c.TARE_IMMEDIATELY
        return _weighing(await self._io(self._request, command), command)

    async def _zero(self, *, stable: bool) -> bool:
        command = c.ZERO if stable else c.ZERO_IMMEDIATELY
        response = await self._io(self._request, command)
        return response.status != "D"

    def _identity(self) -> BalanceIdentity:
        if self.serial_number is None:
            raise NotConnected(self.name)
        return BalanceIdentity(
            self.balance_type or self.model.name, self.serial_number, self.capacity_g
        )

    # -- one exchange --------------------------------------------------------------------------
    def _request(self, command: c.Command) -> Response:
        """Send ``command``, read its one answer line, and return it if it says "done"; raise
        the typed error otherwise."""
        transport = self._need_transport()
        transport.discard_input()  # a late answer to an earlier, timed-out command
        transport.write(command.encode())
        wait = self.model.stable_timeout_s if command.waits_for_stability else self._timeout
        before = transport.timeout
        transport.timeout = max(wait, self._timeout)
        try:
            line = self._read_line(transport)
        except Timeout:
            raise Timeout(
                f"{self.name}: no answer to {command.code} within {transport.timeout:g} s",
                hint="check the cable, the port's settings (9600 baud 8N1 by default) and that "
                "the balance is on and in MT-SICS mode",
            ) from None
        finally:
            transport.timeout = before
        try:
            response = parse(line)
        except SICSFormatError as exc:
            raise InstrumentError(
                f"{self.name}: the answer to {command.code} is not MT-SICS: {exc}",
                hint="check the port's settings (9600 8N1 by default) and the balance's "
                "interface mode (MT-SICS)",
            ) from None
        _check(response, command, self.name)
        return response

    def _read_line(self, transport: Transport) -> bytes:
        """One answer line, a byte at a time (a serial read of more would wait out its
        timeout); :class:`Timeout` when the balance stops sending."""
        line = bytearray()
        while not line.endswith(TERMINATOR):
            if len(line) >= MAX_LINE:
                raise InstrumentError(
                    f"{self.name}: an answer longer than {MAX_LINE} bytes without CR LF",
                    hint="check the balance's interface settings (MT-SICS, CR LF)",
                )
            line += transport.read(1)
        return bytes(line)

    def _need_transport(self) -> Transport:
        if self._transport is None:
            raise NotConnected(self.name)
        return self._transport

    async def _io(self, function: Callable[..., T], *args: Any) -> T:
        """Blocking I/O off the event loop (an in-process balance answers inline)."""
        return await self._need_transport().off_loop(function, *args)


# -- answers -----------------------------------------------------------------------------------
def _check(response: Response, command: c.Command, name: str) -> None:
    """Raise the typed error for an answer that is not "done"."""
    if response.general_error:
        meaning = GENERAL_ERRORS[response.ident]
        message = f"{name}: {command.code} refused: {response.ident}, {meaning}"
        if response.ident == "ES":
            raise NotSupported(
                message,
                hint=f"this balance does not implement MT-SICS "
                f"{command.code} (level {command.level})",
            )
        if response.ident == "EL":
            raise PreconditionFailed(message, hint="check the balance's display and settings")
        raise InstrumentError(message, hint="check the cable and the port's settings; retry")
    if response.ident != command.reply_id:
        raise InstrumentError(
            f"{name}: answer {response.ident!r} to {command.code}, expected {command.reply_id!r}",
            hint="another host may share the port; the next command resynchronises",
        )
    status = response.status
    if status in command.done:
        return
    what = command.description
    if status == "I":
        if command.waits_for_stability:
            raise Timeout(
                f"{name}: no stable reading for '{what}' within the balance's timeout",
                hint="let the load settle (close the draft shield) or use mode 'immediate'",
            )
        raise Busy(
            f"{name}: the balance is busy ({command.code} not executable now)",
            hint="retry when the command in progress has finished",
        )
    if status in "+-":
        over = status == "+"
        if command.code.startswith("Z"):
            raise PreconditionFailed(
                f"{name}: the load is {'above' if over else 'below'} the zero-setting range",
                hint="zero only an empty pan; tare a vessel instead",
            )
        raise PreconditionFailed(
            f"{name}: the balance is in {'overload' if over else 'underload'}",
            hint="the load exceeds the balance's capacity; remove some"
            if over
            else "put the pan and vessel back, then zero",
        )
    raise InstrumentError(
        f"{name}: unexpected status {status!r} in the answer to {command.code}",
        hint="check that the balance speaks MT-SICS",
    )


def _weighing(response: Response, command: c.Command) -> Weighing:
    try:
        value, unit = response.weight()
    except SICSFormatError as exc:
        raise InstrumentError(f"{command.code}: {exc}") from None
    factor = _GRAMS.get(unit)
    if factor is None:
        raise InstrumentError(
            f"the balance answered in {unit!r}, not grams",
            hint="set the balance's unit to g (MT-SICS weight values come in unit 1)",
        )
    return Weighing(value * factor, response.status == "S")


def _one_text(response: Response, command: c.Command) -> str:
    if len(response.fields) != 1:
        raise InstrumentError(f"{command.code}: expected one text field, got {response.fields}")
    return response.fields[0].strip()


def _type_and_capacity(text: str, model: BalanceModel) -> tuple[str, float]:
    """``"XPR205 220.00000 g"`` → ``("XPR205", 220.0)``; the model's figures if the text does
    not end in a capacity and a unit (the text's layout varies between families)."""
    words = text.split()
    if len(words) >= 3 and words[-1] in _GRAMS:
        try:
            return " ".join(words[:-2]), float(words[-2]) * _GRAMS[words[-1]]
        except ValueError:
            pass
    log.info("balance data %r give no capacity; using the %s's", text, model.name)
    return text or model.name, model.capacity_g
