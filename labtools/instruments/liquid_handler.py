"""The liquid-handler interface: tips, aspirate, dispense, transfer, mix, plate moves.

Wells are named ``"<labware>:<well>"`` (``"plate_1:A1"``); a single-container labware such as a
trough or a cuvette may be named alone (``"cuvette"``). Volumes are what the handler is asked to
move; what it really delivers differs by the pipette's systematic and random error.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from typing_extensions import TypedDict

from labtools.instrument import Instrument
from labtools.tool import Arg, tool
from labtools.units import QuantityJSON, Range, Volume

__all__ = [
    "ChannelState",
    "DeckState",
    "LabwareState",
    "LiquidHandler",
    "LiquidHandlerLimits",
    "LiquidMoved",
    "MixDone",
    "PlateMoved",
    "TipType",
    "TipsDropped",
    "TipsPickedUp",
    "TransferDone",
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

    @property
    def channel(self) -> Range:
        return Range(0, self.channels - 1)

    @property
    def tip_volumes(self) -> str:
        """The volume range of each tip type, as text for tool descriptions."""
        ranges = ", ".join(f"{t.name} {t.volume.describe()}" for t in self.tip_types)
        return f"By tip type: {ranges}."

    @property
    def volume(self) -> Range:
        """The volume range over all tip types (µL)."""
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


class LiquidMoved(TypedDict):
    channel: int
    well: str
    volume: QuantityJSON
    tip_volume: QuantityJSON
    well_volume: QuantityJSON


class TransferDone(TypedDict):
    channel: int
    source: str
    destination: str
    volume: QuantityJSON
    source_volume: QuantityJSON
    destination_volume: QuantityJSON


class MixDone(TypedDict):
    channel: int
    well: str
    volume: QuantityJSON
    cycles: int


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


_CHANNEL = "Pipetting channel, counted from 0."
_WELL = "Well as '<labware>:<well>', e.g. 'plate_1:A1'; a trough or cuvette by its name alone."


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
        """Pick up new tips from a tip rack, one per listed channel, in rack order."""

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
        channel: Annotated[int, Arg(_CHANNEL, within="channel")],
        well: Annotated[str, Arg(_WELL)],
        volume: Annotated[
            Volume, Arg("Volume to draw into the tip.", within="volume", note="tip_volumes")
        ],
    ) -> LiquidMoved:
        """Aspirate liquid from a well into the tip on a channel.

        The tip's type bounds the volume; the well must hold it above its dead volume.
        """

    @tool(destructive=True)
    @abstractmethod
    async def dispense(
        self,
        channel: Annotated[int, Arg(_CHANNEL, within="channel")],
        well: Annotated[str, Arg(_WELL)],
        volume: Annotated[
            Volume, Arg("Volume to expel from the tip.", within="volume", note="tip_volumes")
        ],
    ) -> LiquidMoved:
        """Dispense liquid from the tip on a channel into a well (which must have room)."""

    @tool(destructive=True)
    @abstractmethod
    async def transfer(
        self,
        channel: Annotated[int, Arg(_CHANNEL, within="channel")],
        source: Annotated[str, Arg("Well to aspirate from, as '<labware>:<well>'.")],
        destination: Annotated[str, Arg("Well to dispense into, as '<labware>:<well>'.")],
        volume: Annotated[Volume, Arg("Volume to move.", within="volume", note="tip_volumes")],
    ) -> TransferDone:
        """Transfer a volume from one well to another with the tip on a channel.

        Aspirates, then dispenses; the tip stays on (drop it, or reuse it for the same liquid).
        """

    @tool(destructive=True)
    @abstractmethod
    async def mix(
        self,
        channel: Annotated[int, Arg(_CHANNEL, within="channel")],
        well: Annotated[str, Arg(_WELL)],
        volume: Annotated[
            Volume, Arg("Volume drawn and expelled per cycle.", within="volume", note="tip_volumes")
        ],
        cycles: Annotated[int, Arg("Number of aspirate/dispense cycles.", within="mix_cycles")],
    ) -> MixDone:
        """Mix a well by aspirating and dispensing in place with the tip on a channel."""

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
