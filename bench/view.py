"""The live view's cost to a call, and how soon a page hears of a change.

One virtual lab, a 300 µL tip on channel 0, and the moving pair of ``bench.shadow`` (an
aspirate of 100 µL from ``reservoir:A1`` and its dispense back), timed in rounds that
interleave three conditions: the view closed (no server); open with no page (the server
running, the lab watched); open with a page connected (a client reading the event stream on a
thread of this process, so the state is read and sent as the lab changes: the server's whole
cost, without a browser's drawing). Each condition's best round, in wall time and in the CPU
time of the whole process (every thread: the server's reads, the client's parsing), which a
busy machine disturbs less; goal: a call with the view open and a page connected ≤ 1.05× the
call with the view closed (issue 22).

Then the latency: from the return of a dispense that colours a well to the arrival at the
client of the state showing that colour (median and worst of the dispenses made).

Run: ``python -m bench.view``.
"""

from __future__ import annotations

import gc
import json
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable

from bench.timing import few, restore_sigint, row
from labtools import Lab
from labtools.view import ViewServer, open_view

UL = {"value": 100.0, "unit": "microliter"}
ITEMS = {"items": [{"channel": 0, "well": "reservoir:A1", "volume": UL}]}


class _Page:
    """A client reading the view's event stream on a thread: the latest state and when it came."""

    def __init__(self, url: str) -> None:
        self.stream = urllib.request.urlopen(url + "events", timeout=60)
        self.state: dict[str, object] = {}
        self.at = 0.0
        self.states = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        event = ""
        try:
            for raw in self.stream:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "state":
                    state = json.loads(line[6:])
                    with self.states:
                        self.state, self.at = state, time.perf_counter()
                        self.states.notify_all()
        except (OSError, ValueError, AttributeError):  # the stream closed under it
            return

    def close(self) -> None:
        self.stream.close()


def _pair(lab: Lab) -> Callable[[], None]:
    def pair() -> None:
        for name in ("lh_aspirate", "lh_dispense"):
            result = lab.call(name, ITEMS)
            if not result.ok:
                raise RuntimeError(f"{name}: {result.error}")

    return pair


def _cost() -> None:
    rounds, number = few(15, 2), few(250, 5)
    conditions = ("closed", "open, no page", "open, page")
    wall = dict.fromkeys(conditions, float("inf"))
    cpu = dict.fromkeys(conditions, float("inf"))
    with Lab.virtual(0) as lab:
        lab.lh.pick_up_tips("tips_300ul", [0])
        pair = _pair(lab)
        for _ in range(few(20, 1)):
            pair()
        for _ in range(rounds):
            for condition in conditions:
                server: ViewServer | None = None
                page: _Page | None = None
                if condition != "closed":
                    server = open_view(lab)
                    if condition == "open, page":
                        page = _Page(server.url)
                    time.sleep(0.3)  # started, the first state read (and sent)
                gc.disable()
                start, start_cpu = time.perf_counter(), time.process_time()
                for _ in range(number):
                    pair()
                calls = number * 2
                took = (time.perf_counter() - start) / calls * 1e6
                took_cpu = (time.process_time() - start_cpu) / calls * 1e6
                gc.enable()
                wall[condition] = min(wall[condition], took)
                cpu[condition] = min(cpu[condition], took_cpu)
                if server is not None:
                    server.stop()  # ends the stream too
                if page is not None:
                    page.close()
    print("moving call (aspirate or dispense of 100 µL), best round; CPU: the whole process's")
    for condition in conditions:
        ratio = wall[condition] / wall["closed"]
        print(row(f"view {condition}, wall", wall[condition], note=f"{ratio:.3f}× closed"))
    for condition in conditions:
        ratio = cpu[condition] / cpu["closed"]
        print(row(f"view {condition}, CPU", cpu[condition], note=f"{ratio:.3f}× closed"))


def _latency() -> None:
    with Lab.virtual(0) as lab:
        lab.lh.pick_up_tips("tips_300ul", [0])
        server = open_view(lab)
        page = _Page(server.url)
        delays = []
        try:
            for n in range(few(20, 3)):
                well = f"plate_1:{'ABCDEFGH'[n % 8]}{n // 8 + 1}"
                lab.call(
                    "lh_aspirate",
                    {"items": [{"channel": 0, "well": "reservoir:A5", "volume": UL}]},
                )
                time.sleep(0.3)  # the aspirate's state sent: the next state is the dispense's
                lab.call("lh_dispense", {"items": [{"channel": 0, "well": well, "volume": UL}]})
                done = time.perf_counter()
                with page.states:
                    page.states.wait_for(
                        lambda well=well: well in page.state.get("colours", {}),  # type: ignore[operator]
                        timeout=10,
                    )
                    delays.append((page.at - done) * 1e3)
        finally:
            page.close()
            server.stop()
    print("a dispense's colour on the page (from the call's return to the state's arrival):")
    print(row("median", statistics.median(delays), "ms"))
    print(row("worst", max(delays), "ms", note=f"of {len(delays)} dispenses"))


def main() -> None:
    restore_sigint()
    _cost()
    _latency()


if __name__ == "__main__":
    main()
