"""The PyLabRobot internals and import paths labtools relies on, checked on the installed PLR.

One test per function of :mod:`labtools.drivers.pylabrobot.internals`, asserting the behaviour
the adapters need from the private attribute or method it wraps: after a PLR upgrade, a failure
here names the internal and says what to do (docs/pylabrobot-upgrade.md). Then the import table
of :mod:`labtools.drivers.pylabrobot.plr`, and a scan of the source: no other module touches a
PLR private name or imports PLR directly.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import logging
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labtools.drivers.pylabrobot import internals, plr
from labtools.drivers.pylabrobot.plr import (
    TIP_CAR_480_A00,
    ChannelsDoNotFitError,
    Coordinate,
    LiquidHandler,
    LiquidHandlerChatterboxBackend,
    MolecularDevicesSpectraMaxM5Backend,
    Resource,
    ResourceHolder,
    STARLetDeck,
    TipTracker,
    cor_96_wellplate_360uL_Fb,
    hamilton_96_tiprack_300uL,
    nest_12_troughplate_15000uL_Vb,
)

ROOT = Path(__file__).resolve().parent.parent
#: the source of the installed packages: labtools, labtools.drivers, labtools.simulators
PACKAGES = ("labtools", "drivers", "simulators")
INTERNALS = ROOT / "drivers" / "pylabrobot" / "internals.py"
IMPORTS = ROOT / "drivers" / "pylabrobot" / "plr.py"
#: modules that still import PyLabRobot directly, owned elsewhere: move them to ``plr``
DIRECT_IMPORTS_PENDING = {
    "simulators/liquid_handling.py",
    "simulators/plate_reading/layout.py",
}
UPGRADE = "see docs/pylabrobot-upgrade.md"


def broken(internal: str, what: str) -> str:
    return f"PyLabRobot internal {internal} changed: {what}; {UPGRADE}"


def _deck_with_plate() -> tuple[object, object, object]:
    deck = STARLetDeck()
    holder = ResourceHolder(name="site", size_x=130.0, size_y=90.0, size_z=0.0)
    deck.assign_child_resource(holder, location=Coordinate(400.0, 100.0, 100.0))
    plate = cor_96_wellplate_360uL_Fb(name="plate")
    holder.assign_child_resource(plate)
    return deck, holder, plate


def _handler(channels: int = 8) -> LiquidHandler:
    deck = STARLetDeck()
    lh = LiquidHandler(backend=LiquidHandlerChatterboxBackend(num_channels=channels), deck=deck)
    asyncio.run(lh.setup())
    return lh


# -- internals ---------------------------------------------------------------------------------
def test_tip_fields_are_the_whole_tip_state() -> None:
    """``TipTracker._tip``/``_pending_tip``/``_tip_origin``: what add_tip writes, what has_tip,
    get_tip and get_tip_origin read (undo and rewind set them directly)."""
    spot = hamilton_96_tiprack_300uL(name="rack").get_item("A1")
    tip = spot.get_tip()
    head = TipTracker(thing="channel 0")
    what = "tip_fields/set_tip_fields must read and write the tracker's whole tip state"
    assert internals.tip_fields(head) == (None, None, None), broken("TipTracker._tip", what)
    head.add_tip(tip, origin=spot, commit=False)
    assert internals.tip_fields(head) == (None, tip, spot), broken("TipTracker._pending_tip", what)
    head.commit()
    assert internals.tip_fields(head) == (tip, tip, spot), broken("TipTracker._tip", what)
    internals.set_tip_fields(head, None, None, None)
    assert not head.has_tip and head.get_tip_origin() is None, broken("TipTracker._tip", what)
    internals.set_tip_fields(head, tip, tip, spot)
    assert head.has_tip, broken("TipTracker._pending_tip", what)
    assert head.get_tip() is tip, broken("TipTracker._tip", what)
    assert head.get_tip_origin() is spot, broken("TipTracker._tip_origin", what)


def test_deck_index_is_the_decks_name_lookup() -> None:
    """``Deck._resources``: every resource on the deck by name, in the order
    get_all_resources lists them; restored in place, get_resource/has_resource follow it."""
    deck, _, plate = _deck_with_plate()
    what = "deck_index/restore_deck_index must save and restore the deck's name lookup"
    saved = internals.deck_index(deck)
    well = plate.get_item("A1")
    assert saved["plate"] is plate and saved[well.name] is well, broken("Deck._resources", what)
    assert list(saved.values()) == deck.get_all_resources(), broken("Deck._resources", what)
    internals.restore_deck_index(deck, {k: v for k, v in saved.items() if k != "plate"})
    assert not deck.has_resource("plate"), broken("Deck._resources", what)
    internals.restore_deck_index(deck, saved)
    assert deck.get_resource("plate") is plate, broken("Deck._resources", what)


def test_arm_pickups_are_what_the_arms_hold() -> None:
    """``LiquidHandler._resource_pickups``: arm → pickup (or ``None``), read by
    get_picked_up_resource; set back, the handler believes the arm holds what was saved."""
    lh = _handler()
    what = "arm_pickups/restore_arm_pickups must save and restore what each arm holds"
    empty = internals.arm_pickups(lh)
    assert empty and all(p is None for p in empty.values()), broken(
        "LiquidHandler._resource_pickups", what
    )
    plate = cor_96_wellplate_360uL_Fb(name="plate")
    holder = ResourceHolder(name="site", size_x=130.0, size_y=90.0, size_z=0.0)
    lh.deck.assign_child_resource(holder, location=Coordinate(400.0, 100.0, 100.0))
    holder.assign_child_resource(plate)
    asyncio.run(lh.pick_up_resource(plate))
    holding = internals.arm_pickups(lh)
    assert lh.get_picked_up_resource() is plate, broken("LiquidHandler._resource_pickups", what)
    internals.restore_arm_pickups(lh, empty)
    assert lh.get_picked_up_resource() is None, broken("LiquidHandler._resource_pickups", what)
    internals.restore_arm_pickups(lh, holding)
    assert lh.get_picked_up_resource() is plate, broken("LiquidHandler._resource_pickups", what)


def test_channel_spread_offsets_say_whether_channels_fit() -> None:
    """``LiquidHandler._compute_spread_offsets(resource, channels, "wide")``: one offset per
    channel where they fit (a trough), ``ChannelsDoNotFitError``/``ValueError`` where not."""
    lh = _handler()
    what = (
        "channel_spread_offsets must return one offset per channel, or raise when they do not fit"
    )
    trough = nest_12_troughplate_15000uL_Vb(name="trough").get_item("A1")
    offsets = internals.channel_spread_offsets(lh, trough, [0, 1, 2], "wide")
    assert len(offsets) == 3 and len({o.y for o in offsets}) == 3, broken(
        "LiquidHandler._compute_spread_offsets", what
    )
    well = cor_96_wellplate_360uL_Fb(name="plate").get_item("A1")
    with pytest.raises((ChannelsDoNotFitError, ValueError)):
        internals.channel_spread_offsets(lh, well, [0, 1, 2, 3], "wide")


@pytest.mark.parametrize("factory", [cor_96_wellplate_360uL_Fb, hamilton_96_tiprack_300uL])
def test_item_identifiers_follow_the_item_order(factory: object) -> None:
    """``ItemizedResource._ordering``: its keys are the items' identifiers in
    get_all_items order (column-major: A1, B1, …)."""
    labware = factory(name="labware")  # type: ignore[operator]
    identifiers = list(internals.item_identifiers(labware))
    expected = [labware.get_child_identifier(item) for item in labware.get_all_items()]
    assert identifiers == expected and identifiers[:2] == ["A1", "B1"], broken(
        "ItemizedResource._ordering", "item_identifiers must list identifiers in item order"
    )


def test_parent_callbacks_propagate_assignments_up_the_tree() -> None:
    """``Resource._call_*_resource_callbacks``: what assign_child_resource registers on a child
    so that assignments under it reach the deck; detached, they no longer do."""
    deck, holder, plate = _deck_with_plate()
    what = "detach_from_parent/attach_to_parent must remove and restore the tree's propagation"
    internals.detach_from_parent(plate, holder)
    plate.assign_child_resource(Resource("detached", 1.0, 1.0, 1.0), location=Coordinate.zero())
    assert not deck.has_resource("detached"), broken("Resource._call_*_resource_callbacks", what)
    internals.attach_to_parent(plate, holder)
    plate.assign_child_resource(Resource("attached", 1.0, 1.0, 1.0), location=Coordinate.zero())
    assert deck.has_resource("attached"), broken("Resource._call_*_resource_callbacks", what)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def plr_warnings() -> Iterator[_Records]:
    records = _Records()
    logger = logging.getLogger("pylabrobot")  # PLR's logger does not propagate to the root
    logger.addHandler(records)
    try:
        yield records
    finally:
        logger.removeHandler(records)


def test_safe_z_check_is_a_callback_that_only_warns(plr_warnings: _Records) -> None:
    """``HamiltonDeck._check_safe_z_height``: a did-assign callback that warns of tall
    resources; once deregistered, assignments no longer run it."""
    what = "skip_safe_z_check must stop the deck's height check (it must only warn)"
    deck = STARLetDeck()
    deck.assign_child_resource(
        Resource("tower", 10.0, 10.0, 300.0), location=Coordinate(400, 100, 0)
    )
    assert any("tower" in m for m in plr_warnings.messages), broken(
        "HamiltonDeck._check_safe_z_height", what
    )
    internals.skip_safe_z_check(deck)
    deck.assign_child_resource(
        Resource("spire", 10.0, 10.0, 300.0), location=Coordinate(450, 100, 0)
    )
    assert not any("spire" in m for m in plr_warnings.messages), broken(
        "HamiltonDeck._check_safe_z_height", what
    )


def test_resources_are_checked_by_identity_with_plrs_refusal() -> None:
    """``LiquidHandler._assert_resources_exist``: what PLR calls on an operation's tip spots (and
    wells) to check they are on its deck; by identity, a same-named stranger is refused with
    PLR's ValueError and the deck's own resource passes."""
    what = "check_resources_by_identity must replace the check PLR's operations call"
    deck = STARLetDeck()
    carrier = TIP_CAR_480_A00(name="carrier")
    carrier[0] = hamilton_96_tiprack_300uL(name="tips")
    deck.assign_child_resource(carrier, rails=1)
    handler = LiquidHandler(backend=LiquidHandlerChatterboxBackend(), deck=deck)
    internals.check_resources_by_identity(handler)
    stranger = hamilton_96_tiprack_300uL(name="tips").get_item("A1")
    ours = deck.get_resource("tips").get_item("A1")
    handler._assert_resources_exist([ours])
    with pytest.raises(ValueError, match="is not assigned to the deck"):
        handler._assert_resources_exist([stranger])
    asyncio.run(handler.setup())
    with pytest.raises(ValueError, match="is not assigned to the deck"):
        asyncio.run(handler.pick_up_tips([stranger]))
    asyncio.run(handler.pick_up_tips([ours]))
    assert handler.head[0].has_tip, broken("LiquidHandler._assert_resources_exist", what)


def _chatterbox_handler() -> tuple[object, object]:
    deck = STARLetDeck()
    carrier = TIP_CAR_480_A00(name="carrier")
    carrier[0] = hamilton_96_tiprack_300uL(name="tips")
    deck.assign_child_resource(carrier, rails=1)
    return deck, LiquidHandler(backend=LiquidHandlerChatterboxBackend(), deck=deck)


def test_check_backend_arguments_once_reads_each_method_once() -> None:
    """``LiquidHandler._check_args(method, backend_kwargs, default, strictness)``: the backend
    keyword arguments to drop (none when none are given), ``TypeError`` for a missing one, and
    called by PLR's operations; the wrapper asks it once per method when no keyword arguments
    are given, every time otherwise."""
    what = "check_backend_arguments_once must wrap the check PLR's operations call"
    deck, handler = _chatterbox_handler()
    asked: list[str] = []
    check = handler._check_args

    def counted(method: Any, kwargs: Any, default: Any, strictness: Any) -> Any:
        asked.append(method.__name__)
        return check(method, kwargs, default, strictness)

    handler._check_args = counted
    internals.check_backend_arguments_once(handler)

    class Plain(LiquidHandlerChatterboxBackend):
        async def aspirate(self, ops: Any, use_channels: Any) -> None: ...

    class Needy(LiquidHandlerChatterboxBackend):
        async def aspirate(self, ops: Any, use_channels: Any, speed: float) -> None: ...

    aspirate, default = Plain().aspirate, {"ops", "use_channels"}
    for _ in range(3):
        assert handler._check_args(aspirate, {}, default, None) == set()
    assert asked == ["aspirate"], broken("LiquidHandler._check_args", what)
    for _ in range(2):  # an extra argument: PLR's to drop (or refuse), asked each time
        assert handler._check_args(aspirate, {"speed": 1}, default, None) == {"speed"}
    needy = Needy().aspirate
    for _ in range(2):
        with pytest.raises(TypeError, match="Missing arguments"):
            handler._check_args(needy, {}, default, None)
    assert asked == ["aspirate"] * 5, broken("LiquidHandler._check_args", what)
    asyncio.run(handler.setup())
    spot = deck.get_resource("tips").get_item("A1")
    asyncio.run(handler.pick_up_tips([spot]))
    assert asked[-1] == "pick_up_tips", broken("LiquidHandler._check_args", what)


def test_log_commands_only_when_debugging_formats_nothing_otherwise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``LiquidHandler._log_command(name, **kwargs)`` logs ``name(k=v, …)`` at debug level on
    the ``pylabrobot`` logger; wrapped, it formats nothing while that logger would drop it."""
    what = "log_commands_only_when_debugging must wrap PLR's debug line of each operation"
    _, handler = _chatterbox_handler()
    internals.log_commands_only_when_debugging(handler)
    with caplog.at_level(logging.DEBUG, logger="pylabrobot"):
        handler._log_command("aspirate", vols=[1.0])
    lines = [r.getMessage() for r in caplog.records if r.name == "pylabrobot"]
    assert lines == ["aspirate(vols=[1.0])"], broken("LiquidHandler._log_command", what)

    def unformattable(value: Any) -> Any:
        raise AssertionError("formatted a line no one reads")

    handler._format_param = unformattable
    with caplog.at_level(logging.INFO, logger="pylabrobot"):
        handler._log_command("aspirate", vols=[1.0])  # formats nothing
    debugging = caplog.at_level(logging.DEBUG, logger="pylabrobot")
    with debugging, pytest.raises(AssertionError, match="no one reads"):
        handler._log_command("aspirate", vols=[1.0])


def test_md_cutoff_filter_maps_emission_to_a_filter_index() -> None:
    """``MolecularDevicesBackend._get_cutoff_filter_index_from_wavelength``: the cutoff filter
    the backend's own single-wavelength fluorescence reads pick (labtools' multi-list plan)."""
    backend = MolecularDevicesSpectraMaxM5Backend(port="labtools-test")
    what = "md_cutoff_filter must map an emission wavelength to PLR's cutoff filter index"
    indices = [internals.md_cutoff_filter(backend, nm) for nm in (300, 520, 580)]
    assert indices == [1, 7, 10], broken(
        "MolecularDevicesBackend._get_cutoff_filter_index_from_wavelength", what
    )


def test_every_internal_is_tested_here() -> None:
    """A new function in the internals module needs a test in this file."""
    source = Path(__file__).read_text(encoding="utf-8")
    untested = [name for name in internals.__all__ if f"internals.{name}(" not in source]
    assert not untested, f"no test here for {untested}"


# -- import paths ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(plr.PATHS))
def test_every_name_imports_from_its_0_2_path(name: str) -> None:
    """On the installed PLR each name is where :data:`plr.PATHS` says (no fallback needed)."""
    path = plr.PATHS[name]
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError:
        pytest.fail(
            f"PyLabRobot has no module {path} (for {name}); labtools takes it from "
            f"{plr.legacy_path(path)} if that exists: update plr.PATHS to the new path; {UPGRADE}"
        )
    assert hasattr(module, name), f"PyLabRobot has no {name} in {path}: update plr.PATHS; {UPGRADE}"
    assert getattr(plr, name) is getattr(module, name)


def test_legacy_paths() -> None:
    assert plr.legacy_path("pylabrobot.plate_reading.backend") == (
        "pylabrobot.legacy.plate_reading.backend"
    )
    assert plr.legacy_path("pylabrobot.liquid_handling") == "pylabrobot.legacy.liquid_handling"
    assert plr.legacy_path("pylabrobot.resources.errors") is None
    assert plr.legacy_path("pylabrobot.plate_readingx") is None


def test_a_missing_0_2_module_is_taken_from_legacy(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLR main's layout: the 0.2 module is gone, its ``pylabrobot.legacy`` twin has the name."""
    twin = types.ModuleType("pylabrobot.legacy.plate_reading.gone")
    monkeypatch.setitem(sys.modules, twin.__name__, twin)
    assert plr.load_module("pylabrobot.plate_reading.gone") is twin


def test_other_import_errors_are_not_hidden() -> None:
    with pytest.raises(ModuleNotFoundError):
        plr.load_module("pylabrobot.resources.gone")
    with pytest.raises(AttributeError, match="no PyLabRobot name"):
        plr.resolve("NotAPyLabRobotName")


# -- the source --------------------------------------------------------------------------------
def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_privates(tree: ast.AST, *, own: bool = False) -> set[str]:
    """Private names a module defines: functions, classes, names, arguments, and attributes it
    stores (``own``: only on ``self`` or ``cls``, so writing another object's private field
    does not count as defining it)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if not own or (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return {n for n in names if _is_private(n)}


@pytest.fixture(scope="module")
def plr_privates() -> set[str]:
    """Every private name PLR's resources, machines, liquid handling and plate reading define
    (and, from PLR main on, ``pylabrobot.legacy``)."""
    root = Path(importlib.import_module("pylabrobot").__file__ or "").parent
    names: set[str] = set()
    for package in ("resources", "liquid_handling", "plate_reading", "machines", "legacy"):
        for path in (root / package).rglob("*.py"):
            names |= _defined_privates(ast.parse(path.read_text(encoding="utf-8")))
    return names


def _touches(tree: ast.Module) -> set[str]:
    """Private names a module reads or writes on objects (attributes, getattr/setattr)."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            used.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_private(node.args[1].value)
        ):
            used.add(node.args[1].value)
    return used


def _plr_imports(tree: ast.Module) -> list[str]:
    found = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    found += [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    ]
    return [m for m in found if m == "pylabrobot" or m.startswith("pylabrobot.")]


def _handles_plr(tree: ast.Module) -> bool:
    """Whether a module imports PLR or the adapters, and so may hold PLR objects."""
    modules = _plr_imports(tree) + [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("labtools.drivers.pylabrobot")
    ]
    return bool(modules)


def _foreign_privates(tree: ast.Module, plr_privates: set[str]) -> list[str]:
    """PLR private names a module uses that it does not define on its own objects, and private
    names it imports from PLR."""
    foreign = (_touches(tree) & plr_privates) - _defined_privates(tree, own=True)
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pylabrobot")
        for alias in node.names
        if _is_private(alias.name)
    }
    return sorted(foreign | imported)


def test_the_scan_sees_private_fields(plr_privates: set[str]) -> None:
    """The scan below flags reads, writes and getattr of PLR's private names, not a class's own."""
    source = (
        "class Own:\n"
        "    def __init__(self):\n"
        "        self._num_channels = 1\n"
        "    def n(self):\n"
        "        return self._num_channels\n"
        "def f(tracker, deck, lh):\n"
        "    tracker._tip = None\n"
        "    getattr(deck, '_resources')\n"
        "    return lh._resource_pickups\n"
    )
    flagged = _foreign_privates(ast.parse(source), plr_privates)
    assert flagged == ["_resource_pickups", "_resources", "_tip"]


def test_only_the_internals_module_touches_plr_private_names(plr_privates: set[str]) -> None:
    """In every module that handles PLR objects, a private attribute it uses is its own."""
    offenders = {
        name: flagged
        for name, tree in _modules()
        if name != INTERNALS.relative_to(ROOT).as_posix() and _handles_plr(tree)
        if (flagged := _foreign_privates(tree, plr_privates))
    }
    assert not offenders, (
        f"PyLabRobot private names used outside drivers/pylabrobot/internals.py: {offenders}; "
        "wrap each in a function of internals.py with a test in tests/test_plr_internals.py"
    )


def test_only_the_plr_module_imports_pylabrobot() -> None:
    """Every PLR import goes through ``plr`` (:data:`DIRECT_IMPORTS_PENDING` aside)."""
    direct = {name for name, tree in _modules() if _plr_imports(tree)}
    direct.discard(IMPORTS.relative_to(ROOT).as_posix())
    unexpected = direct - DIRECT_IMPORTS_PENDING
    assert not unexpected, (
        f"{sorted(unexpected)} import pylabrobot directly: add the names to "
        "drivers/pylabrobot/plr.py (PATHS) and import them from labtools.drivers.pylabrobot.plr"
    )
