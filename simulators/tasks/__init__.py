"""Grounded tasks: experiments with hidden truth, scored from the physical world.

Each module holds one :class:`labtools.session.Task`; they are registered as the
``labtools.tasks`` entry points in ``pyproject.toml`` and found through
:mod:`labtools.session.registry`, so nothing here is imported until a task is asked for.
"""
