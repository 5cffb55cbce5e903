"""PyLabRobot (pinned 0.2.2) adapters. Every ``pylabrobot`` import of the drivers lives here.

Modules are imported by path from lab configurations (e.g.
``"labtools.drivers.pylabrobot.liquid_handler:PLRLiquidHandler"``); this package imports none
of them.
"""
