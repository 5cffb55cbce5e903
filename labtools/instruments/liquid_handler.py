"""The liquid-handler interface: tips, aspirate, dispense, transfer, mix, plate moves.

Wells are named ``"<labware>:<well>"`` (``"plate_1:A1"``); a single-container labware such as a
trough or a cuvette may be named alone (``"cuvette"``). Volumes are what the handler is asked to
move; what it really delivers differs by the pipette's systematic and random error.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

from typing_extensions import TypedDict

from labtools.instrument import Instrument
from labtools.tool import Arg, tool
from labtools.units import QuantityJSON, Range, Volume

__all__ = [
    "ChannelMixed",
    "ChannelMoved",
    "ChannelState",
    "ChannelVolume",
    "DeckState",
    "LabwareState",
    "LiquidHandler",
    "LiquidHandlerLimits",
    "LiquidMoved",
    "MixDone",
    "PlateMoved",
    "TipPolicy",
    "TipType",
    "TipsDropped",
    "TipsPickedUp",
    "Transfer",
    "TransferDone",
    "TransferNote",
]


@dataclass(frozen=True)
class TipType:
    """A tip model and the volume one aspiration with it may take (µL)."""

    name: str
    volume: Range


@dataclass(frozen=True)
class LiquidHandlerLimits:
    """What the handler can do, as data."""

    channels: int
    tip_types: tuple[TipType, ...]
    mix_cycles: Range = Range(1, 20)
    #: how many times one transfer's volume may be split into trips of at most a tip's capacity
    max_trips: int = 100

    @cached_property
    def channel(self) -> Range:  # cached: every call's items are checked against it
        return Range(0, self.channels - 1)

    @property
    def tip_volumes(self) -> str:
        """The volume range of each tip type, as text for tool descriptions."""
        ranges = ", ".join(f"{t.name} {t.volume.low:g}–{t.volume.high:g}" for t in self.tip_types)
        return f"µL by tip type: {ranges}."

    @property
    def mix_after(self) -> Range:
        """Mixing cycles after each transfer: 0 (none) up to the mix tool's most."""
        return Range(0, self.mix_cycles.high)

    @property
    def mix_volume(self) -> Range:
        """Mixing volume after a transfer (µL): up to the largest tip (0 with no mixing)."""
        return Range(0, self.volume.high, "microliter")

    @property
    def transfer_volume(self) -> Range:
        """One transfer's volume (µL): a tip's least up to ``max_trips`` of the largest tip."""
        return Range(self.volume.low, self.volume.high * self.max_trips, "microliter")

    @property
    def item_ranges(self) -> str:
        """The ranges inside each item of a multi-channel call, as text for descriptions."""
        return (
            f"Each item: channel {self.channel.describe()}; "
            f"volume {self.volume.describe()}. {self.tip_volumes}"
        )

    @cached_property
    def volume(self) -> Range:
        """The volume range over all tip types (µL); cached, as the fields are frozen."""
        return Range(
            min(t.volume.low for t in self.tip_types),
            max(t.volume.high for t in self.tip_types),
            "microliter",
        )


class TipOnChannel(TypedDict):
    channel: int
    tip: str
    tip_type: str


class TipsPickedUp(TypedDict):
    tips: list[TipOnChannel]
    tips_left: int


class TipsDropped(TypedDict):
    channels: list[int]


class ChannelVolume(TypedDict):
    """One channel's part of a multi-channel aspirate, dispense or mix."""

    channel: int
    well: str
    volume: Volume


class Transfer(TypedDict):
    """One transfer of a batch: ``volume`` from ``source`` into ``destination``."""

    source: str
    destination: str
    volume: Volume


#: tip handling of a transfer batch (Opentrons' ``new_tip``, plus PyLabRobot-style reuse)
TipPolicy = Literal["new", "per_source", "reuse", "mounted"]


class ChannelMoved(TypedDict):
    channel: int
    well: str
    volume: QuantityJSON
    tip_volume: QuantityJSON
    well_volume: QuantityJSON


class LiquidMoved(TypedDict):
    items: list[ChannelMoved]


class ChannelMixed(TypedDict):
    channel: int
    well: str
    volume: QuantityJSON


class MixDone(TypedDict):
    items: list[ChannelMixed]
    cycles: int


class TransferNote(TypedDict):
    transfer: int
    note: str


class TransferDone(TypedDict):
    transfers: int
    volume: QuantityJSON
    rounds: int
    trips: int
    tips_used: int
    seconds: QuantityJSON
    notes: list[TransferNote]


class PlateMoved(TypedDict):
    plate: str
    location: str


class LabwareState(TypedDict):
    name: str
    kind: str
    location: str
    well_capacity: QuantityJSON
    wells: dict[str, float]


class ChannelState(TypedDict):
    channel: int
    tip: str | None
    tip_volume: QuantityJSON


class DeckState(TypedDict):
    labware: list[LabwareState]
    tips_left: dict[str, int]
    channels: list[ChannelState]
    volume_unit: str
    labels: dict[str, str]
    free_sites: list[str]


_ITEMS = (
    "One per channel: its channel, a well ('plate_1:A1'; a trough or cuvette by its name alone) "
    "and the volume to {verb} its tip. Each channel once; channels share a well only if every "
    "item names it (a trough)."
)
#: the JSON form of 0 µL: ``mix_volume``'s default for Python callers
_NO_VOLUME: QuantityJSON = {"value": 0.0, "unit": "microliter"}


class LiquidHandler(Instrument):
    """A pipetting robot with ``limits.channels`` independent channels and disposable tips."""

    kind = "liquid_handler"
    limits: LiquidHandlerLimits

    @tool(destructive=True)
    @abstractmethod
    async def pick_up_tips(
        self,
        tip_rack: Annotated[str, Arg("Tip rack to take the next unused tips from.")],
        channels: Annotated[
            Sequence[int], Arg("Channels to fit with a tip, e.g. [0] or [0, 1].", within="channel")
        ],
    ) -> TipsPickedUp:
        """Pick up new tips from a rack, one per listed channel, in rack order. Use the smallest
        tip that holds the volume: a tip errs by about constant µL (at 1 µL a 300 µL tip by tens
        of %, a 10 µL tip by ~5 %)."""

    @tool(destructive=True)
    @abstractmethod
    async def drop_tips(
        self,
        channels: Annotated[Sequence[int], Arg("Channels whose tips to drop.", within="channel")],
    ) -> TipsDropped:
        """Drop the tips of the listed channels into the trash; liquid left in them is lost."""

    @tool(destructive=True)
    @abstractmethod
    async def aspirate(
        self,
        items: Annotated[
            Sequence[ChannelVolume], Arg(_ITEMS.format(verb="draw into"), note="item_ranges")
        ],
    ) -> LiquidMoved:
        """Aspirate on one or more channels at once (one multi-channel move), each from its well
        into its tip. A tip's type bounds its volume; a well keeps its dead volume. A refused
        call changes nothing."""

    @tool(destructive=True)
    @abstractmethod
    async def dispense(
        self,
        items: Annotated[
            Sequence[ChannelVolume], Arg(_ITEMS.format(verb="expel from"), note="item_ranges")
        ],
    ) -> LiquidMoved:
        """Dispense on one or more channels at once, each from its tip into its well (which
        must have room). A refused call changes nothing."""

    @tool(destructive=True)
    @abstractmethod
    async def transfer(
        self,
        transfers: Annotated[
            Sequence[Transfer],
            Arg(
                "In order; later ones see earlier ones' effects (a serial dilution). Wells as "
                "'plate_1:A1', a trough or cuvette by its name alone. A volume above a tip's "
                "capacity goes in equal trips.",
                within="transfer_volume",
            ),
        ],
        tip_rack: Annotated[str, Arg("Rack for new tips (unused with 'mounted').")],
        tips: Annotated[
            TipPolicy,
            Arg(
                "'new': a tip per transfer; 'per_source': a new one when the source changes; "
                "'reuse': one per channel; 'mounted': the channels' own, none picked up or "
                "dropped. Tips picked up are dropped at the end."
            ),
        ] = "new",
        channels: Annotated[
            Sequence[int],
            Arg(
                "Channels to use; []: every free one (every one with a tip for 'mounted').",
                within="channel",
            ),
        ] = (),
        mix_cycles: Annotated[
            int,
            Arg(
                "Mixing cycles in each destination after its transfer; 0: none.", within="mix_after"
            ),
        ] = 0,
        mix_volume: Annotated[
            Volume,
            Arg(
                "Volume per mixing cycle (unused with 0 cycles).",
                within="mix_volume",
                note="tip_volumes",
            ),
        ] = _NO_VOLUME,  # type: ignore[assignment]  # JSON form, as Python callers may give it
    ) -> TransferDone:
        """Transfer liquid in a batch, channels working in parallel rounds. The whole batch is
        checked first (believed volumes, capacities, tips): one that would fail anywhere is
        refused, naming the transfer, and nothing moves. The result gives totals and notes
        (trips, a well left below its dead volume)."""

    @tool(destructive=True)
    @abstractmethod
    async def mix(
        self,
        items: Annotated[
            Sequence[ChannelVolume],
            Arg(_ITEMS.format(verb="draw and expel per cycle with"), note="item_ranges"),
        ],
        cycles: Annotated[int, Arg("Number of aspirate/dispense cycles.", within="mix_cycles")],
    ) -> MixDone:
        """Mix wells in place on one or more channels at once, each cycle one multi-channel
        aspiration and dispense. A refused call changes nothing."""

    @tool(destructive=False, idempotent=True)
    @abstractmethod
    async def move_plate(
        self,
        plate: Annotated[str, Arg("Plate to move, e.g. 'plate_1'.")],
        destination: Annotated[
            str, Arg("Where to put it: a free deck site (see lh_get_deck) or 'reader'.")
        ],
    ) -> PlateMoved:
        """Move a plate with the gripper to a free deck site or into the plate reader."""

    @tool(read_only=True)
    @abstractmethod
    async def get_deck(self) -> DeckState:
        """Describe the deck: labware and where it is, the volume in each non-empty well (µL),
        tips left per rack, what each channel holds, stock labels and free plate sites."""
