"""``labtools --log-level``: what the instruments say, and with ``io`` what goes over the wire,
on stderr.

labtools' own loggers get a stderr handler at the level (``labtools.transport`` writes OBP
frames at DEBUG); PyLabRobot's logger goes through PyLabRobot's own ``verbose`` switch at the
same level, where ``io`` is its level 5 (``pylabrobot.io.LOG_LEVEL_IO``: firmware strings, HTTP
calls, serial and USB bytes). PyLabRobot is reached through the driver layer's ``plr`` module,
named by import path (the core imports no driver), and only when the switch is given.
"""

from __future__ import annotations

import importlib
import logging
import sys

__all__ = ["LEVELS", "log_to_stderr"]

#: PyLabRobot's IO level (``pylabrobot.io.LOG_LEVEL_IO``), below DEBUG
IO = 5
LEVELS = {"warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG, "io": IO}
_PLR = "labtools.drivers.pylabrobot.plr"


def log_to_stderr(name: str) -> None:
    """Log labtools and PyLabRobot at level ``name`` (a key of :data:`LEVELS`) to stderr."""
    level = LEVELS[name]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("labtools")
    logger.addHandler(handler)
    logger.setLevel(max(level, logging.DEBUG))
    logger.propagate = False
    importlib.import_module(_PLR).resolve("verbose")(True, level=level)
