"""A test instrument whose construction waits for a gate file: a lab that takes as long to
build as the test wants (``$LABTOOLS_TEST_GATE``). Built, it writes ``<gate>.built``; with
``$LABTOOLS_TEST_FAIL`` set it raises instead."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fakes import FakeLiquidHandler

#: the longest a build waits for its gate (s): a test that forgets to open it fails, not hangs
PATIENCE_S = 300.0


class GatedLiquidHandler(FakeLiquidHandler):
    def __init__(self, name: str = "lh") -> None:
        gate = Path(os.environ["LABTOOLS_TEST_GATE"])
        deadline = time.monotonic() + PATIENCE_S
        while not gate.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the gate {gate} was never opened")
            time.sleep(0.01)
        if os.environ.get("LABTOOLS_TEST_FAIL"):
            raise ConnectionError("the robot did not answer on /dev/ttyUSB0")
        super().__init__(name)
        Path(f"{gate}.built").write_text("built", encoding="utf-8")
