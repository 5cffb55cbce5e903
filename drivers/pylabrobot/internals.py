"""Every PyLabRobot internal labtools relies on, one small function each.

PLR 0.2.2 has no public API for what these do: put a tracker or a deck back without firing
callbacks (rewind, undo), list a labware's identifiers in one pass, ask where channels would go
in a well, skip a per-assignment check, map a wavelength to a filter. Each function names the
private attribute or method it uses and the behaviour it relies on; tests/test_plr_internals.py
checks each of them on the installed PLR, so a PLR upgrade that breaks one fails there first.
No other labtools module touches a PLR private name (that test checks that too).
"""

from __future__ import annotations

import logging
import types
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "arm_pickups",
    "attach_to_parent",
    "channel_spread_offsets",
    "check_backend_arguments_once",
    "check_resources_by_identity",
    "deck_index",
    "detach_from_parent",
    "item_identifiers",
    "log_commands_only_when_debugging",
    "md_cutoff_filter",
    "restore_arm_pickups",
    "restore_deck_index",
    "set_tip_fields",
    "skip_safe_z_check",
    "tip_fields",
]

TipFields = tuple[Any, Any, Any]


# -- tip trackers ------------------------------------------------------------------------------
def tip_fields(tracker: Any) -> TipFields:
    """A ``TipTracker``'s committed tip, pending tip and tip origin (``_tip``, ``_pending_tip``,
    ``_tip_origin``): together, the whole state ``has_tip``/``get_tip``/``get_tip_origin`` read."""
    return tracker._tip, tracker._pending_tip, tracker._tip_origin


def set_tip_fields(tracker: Any, tip: Any, pending: Any, origin: Any) -> None:
    """Set the three fields of :func:`tip_fields` directly: no callbacks, no has-tip checks (PLR's
    ``add_tip``/``remove_tip`` would raise or fire callbacks); ``None`` for all three is a
    tracker without a tip."""
    tracker._tip, tracker._pending_tip, tracker._tip_origin = tip, pending, origin


# -- deck and handler --------------------------------------------------------------------------
def deck_index(deck: Any) -> dict[str, Any]:
    """A copy of the deck's name index (``Deck._resources``: name → resource, in assignment order;
    ``get_resource``/``has_resource``/``get_all_resources`` read it)."""
    return dict(deck._resources)


def restore_deck_index(deck: Any, saved: dict[str, Any]) -> None:
    """Put a :func:`deck_index` back in place (the same dict object, as PLR keeps it)."""
    index = deck._resources
    index.clear()
    index.update(saved)


def arm_pickups(lh: Any) -> dict[int, Any]:
    """A copy of what each arm of a PLR ``LiquidHandler`` holds (``_resource_pickups``: arm →
    ``ResourcePickup`` or ``None``; ``get_picked_up_resource`` reads arm 0)."""
    return dict(lh._resource_pickups)


def restore_arm_pickups(lh: Any, saved: dict[int, Any]) -> None:
    """Each arm the handler has now holds what :func:`arm_pickups` saved (``None`` if unknown)."""
    pickups = lh._resource_pickups
    for arm in pickups:
        pickups[arm] = saved.get(arm)


def channel_spread_offsets(lh: Any, container: Any, channels: Sequence[int], spread: str) -> Any:
    """Where ``LiquidHandler._compute_spread_offsets`` puts ``channels`` in one container (the
    offsets ``aspirate``/``dispense`` use); raises ``ChannelsDoNotFitError`` or ``ValueError``
    when they do not fit."""
    return lh._compute_spread_offsets(container, list(channels), spread)


# -- resource tree -----------------------------------------------------------------------------
def item_identifiers(labware: Any) -> Iterable[str]:
    """A labware's item identifiers in ``get_all_items()`` order (the keys of
    ``ItemizedResource._ordering``), without ``get_child_identifier``'s scan per item."""
    return labware._ordering.keys()


def _tree_callbacks(parent: Any) -> tuple[Any, Any, Any, Any]:
    return (
        parent._call_will_assign_resource_callbacks,
        parent._call_did_assign_resource_callbacks,
        parent._call_will_unassign_resource_callbacks,
        parent._call_did_unassign_resource_callbacks,
    )


def detach_from_parent(child: Any, parent: Any) -> None:
    """Deregister from ``child`` the four ``parent._call_*_resource_callbacks`` that
    ``assign_child_resource`` registered (what propagates assignments up the tree)."""
    will_assign, did_assign, will_unassign, did_unassign = _tree_callbacks(parent)
    child.deregister_will_assign_resource_callback(will_assign)
    child.deregister_did_assign_resource_callback(did_assign)
    child.deregister_will_unassign_resource_callback(will_unassign)
    child.deregister_did_unassign_resource_callback(did_unassign)


def attach_to_parent(child: Any, parent: Any) -> None:
    """Register on ``child`` the four callbacks :func:`detach_from_parent` removes, as
    ``assign_child_resource`` does."""
    will_assign, did_assign, will_unassign, did_unassign = _tree_callbacks(parent)
    child.register_will_assign_resource_callback(will_assign)
    child.register_did_assign_resource_callback(did_assign)
    child.register_will_unassign_resource_callback(will_unassign)
    child.register_did_unassign_resource_callback(did_unassign)


def check_resources_by_identity(liquid_handler: Any) -> None:
    """Make a PLR ``LiquidHandler`` check that the tip spots and wells of an operation are on
    its deck by identity (``_assert_resources_exist``, which compares each with the deck's
    resource of its name by ``Resource.__eq__``: absolute sizes through rotations and the whole
    subtree, a tenth of a millisecond per tip spot). The deck's own objects pass, as before; a
    resource of the same name that is not the deck's is refused with PLR's own message."""

    def assert_resources_exist(resources: Sequence[Any]) -> None:
        for resource in resources:
            if liquid_handler.deck.get_resource(resource.name) is not resource:
                raise ValueError(f"Resource {resource} is not assigned to the deck.")

    liquid_handler._assert_resources_exist = assert_resources_exist


def check_backend_arguments_once(liquid_handler: Any) -> None:
    """Make a PLR ``LiquidHandler`` check once per backend method that an operation without
    backend keyword arguments may call it (``_check_args``, which reads the method's signature
    with ``inspect`` on every operation, ~10 µs; with no keyword arguments its answer depends
    on the method and the operation's own parameters alone). A call with backend keyword
    arguments, or one whose check fails, is checked by PLR every time, as before."""
    check = liquid_handler._check_args
    passed: set[tuple[Any, frozenset[str]]] = set()

    def check_args(method: Any, backend_kwargs: Any, default: Any, strictness: Any) -> Any:
        if backend_kwargs or not isinstance(method, types.MethodType):
            return check(method, backend_kwargs, default, strictness)
        key = (method.__func__, frozenset(default))
        if key not in passed:
            extra = check(method, backend_kwargs, default, strictness)  # raises if it fails
            if extra:
                return extra
            passed.add(key)
        return set()

    liquid_handler._check_args = check_args


def log_commands_only_when_debugging(liquid_handler: Any) -> None:
    """Make a PLR ``LiquidHandler`` format an operation's arguments for its debug log line
    (``_log_command``, on the ``pylabrobot`` logger) only when that logger emits debug records;
    PLR formats them on every operation, ~4 µs, and then drops the line."""
    log_command = liquid_handler._log_command
    logger = logging.getLogger("pylabrobot")

    def log_when_debugging(name: str, **kwargs: Any) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            log_command(name, **kwargs)

    liquid_handler._log_command = log_when_debugging


def skip_safe_z_check(deck: Any) -> None:
    """Stop a Hamilton deck checking every assigned resource's height (``_check_safe_z_height``,
    registered as a did-assign callback by ``HamiltonDeck.__init__``; it only logs warnings)."""
    deck.deregister_did_assign_resource_callback(deck._check_safe_z_height)


# -- plate readers -----------------------------------------------------------------------------
def md_cutoff_filter(backend: Any, emission_nm: int) -> int:
    """The emission cutoff filter index a Molecular Devices backend picks for ``emission_nm``
    (``_get_cutoff_filter_index_from_wavelength``, what its single-wavelength reads use)."""
    return int(backend._get_cutoff_filter_index_from_wavelength(emission_nm))
