"""PyLabRobot (pinned 0.2.2) adapters. Every ``pylabrobot`` name the project uses is imported
through :mod:`.plr`, every PLR internal it relies on is used through :mod:`.internals` (see
docs/pylabrobot-upgrade.md).

Modules are imported by path from lab configurations (e.g.
``"labtools.drivers.pylabrobot.liquid_handler:PLRLiquidHandler"``); this package imports none
of them.
"""
