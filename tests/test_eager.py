"""A simulated instrument's synchronous call is stepped without the event loop, and the loop takes
over when the call suspends: results, exceptions, context variables, locks and cancellation
behave as under ``loop.run_until_complete``; hardware calls always run on the loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Annotated, Any, Literal

import pytest
from typing_extensions import TypedDict

from labtools import Lab
from labtools.eager import run_eagerly
from labtools.errors import Interlock
from labtools.instrument import Instrument
from labtools.journal import WALL_CLOCK_KEYS
from labtools.tool import Arg, tool

_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")

Mode = Literal["returns", "suspends", "waits_for_loop", "refuses", "refuses_later", "timeout"]


class Probed(TypedDict):
    inherited: str
    in_task: bool
    suspended: bool
    thread: str
    seen: str


class Probe(Instrument):
    """Tells how its call ran; ``mode`` chooses whether it suspends and how it ends."""

    kind = "probe"

    @tool()
    async def probe(self, mode: Annotated[Mode, Arg("How the call runs.")]) -> Probed:
        """Report whether the call runs in a task, after suspending or not."""
        inherited = _seen.get()
        _seen.set("tool's")  # never seen by the caller
        suspended = False
        if mode == "returns":
            pass
        elif mode == "refuses":
            raise Interlock("refused before suspending", hint="a test")
        elif mode == "timeout":  # needs a current task from its first step
            async with asyncio.timeout(5):
                await asyncio.sleep(0)
            suspended = True
        else:
            await asyncio.sleep(0)  # a bare yield
            if mode == "waits_for_loop":  # a future only the running loop resolves
                future = asyncio.get_running_loop().create_future()
                asyncio.get_running_loop().call_soon(future.set_result, None)
                await future
            suspended = True
            if mode == "refuses_later":
                raise Interlock("refused after suspending", hint="a test")
        return {
            "inherited": inherited,
            "in_task": asyncio.current_task() is not None,
            "suspended": suspended,
            "thread": threading.current_thread().name,
            "seen": _seen.get(),
        }


class SimulatedProbe(Probe):
    simulated = True


def _lab(simulated: bool) -> Lab:
    return Lab([(SimulatedProbe if simulated else Probe)("p")])


def _untimed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in WALL_CLOCK_KEYS} for e in events]


@pytest.fixture
def callers_value() -> Any:
    token = _seen.set("caller's")
    yield
    _seen.reset(token)


def test_a_simulated_call_that_does_not_suspend_runs_outside_the_loop(callers_value: None) -> None:
    with _lab(simulated=True) as lab:
        result = lab.call("p_probe", {"mode": "returns"})
    assert result.ok, result.error
    assert result.data == {
        "inherited": "caller's",
        "in_task": False,  # stepped directly: no task, no loop run
        "suspended": False,
        "thread": threading.current_thread().name,
        "seen": "tool's",
    }
    assert _seen.get() == "caller's"  # the call ran in a copy of the caller's context


def test_a_simulated_call_that_suspends_finishes_on_the_loop_in_the_same_context(
    callers_value: None,
) -> None:
    with _lab(simulated=True) as lab:
        for mode in ("suspends", "waits_for_loop"):
            result = lab.call("p_probe", {"mode": mode})
            assert result.ok, result.error
            assert result.data == {
                "inherited": "caller's",
                "in_task": True,  # the loop's task ran the rest
                "suspended": True,
                "thread": threading.current_thread().name,
                "seen": "tool's",  # the value set before suspending, in the same context
            }
    assert _seen.get() == "caller's"


def test_a_hardware_call_runs_on_the_loop_and_may_need_a_task_from_its_first_step() -> None:
    with _lab(simulated=False) as lab:
        returned = lab.call("p_probe", {"mode": "returns"})
        timed = lab.call("p_probe", {"mode": "timeout"})
    assert returned.ok and returned.data is not None
    assert returned.data["in_task"] is True
    assert timed.ok, timed.error


@pytest.mark.parametrize("mode", ["returns", "suspends", "waits_for_loop", "refuses_later"])
def test_results_and_journals_are_those_of_the_loop(mode: str) -> None:
    """Stepped or on the loop, a call gives the same result and the same journal event (but
    the task flag that tells them apart, and the wall clock)."""
    seen = []
    for simulated in (True, False):
        with _lab(simulated) as lab:
            result = lab.call("p_probe", {"mode": mode})
            lab.call("p_probe", {"mode": "refuses"})
            lab.call("p_nothing", {})
            events = _untimed(lab.journal.events())
        for event in events:
            if event["ok"]:
                event["data"].pop("in_task")
        seen.append((result.ok, result.error, events))
    assert seen[0] == seen[1]
    assert [e["ok"] for e in seen[0][2]] == [mode != "refuses_later", False, False]
    assert [e.get("error", {}).get("code") for e in seen[0][2]] == [
        None if mode != "refuses_later" else "interlock",
        "interlock",
        "unknown_tool",
    ]


def test_inside_a_running_loop_a_simulated_call_takes_the_helper_thread() -> None:
    async def main() -> Any:
        with _lab(simulated=True) as lab:
            return lab.call("p_probe", {"mode": "returns"})

    result = asyncio.run(main())
    assert result.ok and result.data is not None
    assert result.data["thread"] == "labtools-loop"
    assert result.data["in_task"] is True


# -- run_eagerly against asyncio's own semantics -----------------------------------------------
@pytest.fixture
def loop() -> Any:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_exceptions_come_back_unchanged_before_and_after_suspending(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def fails(suspend: bool) -> None:
        if suspend:
            await asyncio.sleep(0)
        raise ValueError(f"suspended={suspend}")

    for suspend in (False, True):
        with pytest.raises(ValueError, match=f"suspended={suspend}"):
            run_eagerly(fails(suspend), loop)
    assert asyncio._get_running_loop() is None  # put back after the step


def test_the_running_loop_during_the_step_is_the_given_one(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def which() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert run_eagerly(which(), loop) is loop


def test_a_lock_held_elsewhere_is_waited_for_on_the_loop(loop: asyncio.AbstractEventLoop) -> None:
    """A lock contended in the first step makes the call wait on the loop, then take it."""
    lock = asyncio.Lock()
    order = []

    async def contended() -> str:
        await lock.acquire()  # free: taken without suspending
        order.append("held")
        asyncio.get_running_loop().call_soon(lambda: (order.append("released"), lock.release()))
        async with lock:  # contended: waits on the loop until the callback releases it
            order.append("taken again")
        return "done"

    assert run_eagerly(contended(), loop) == "done"
    assert order == ["held", "released", "taken again"]
    assert not lock.locked()


def test_cancellation_reaches_the_rest_of_the_call_at_its_await(
    loop: asyncio.AbstractEventLoop,
) -> None:
    """Once on the loop the call is an ordinary task: cancelling it throws CancelledError in at
    its ``await`` — while it waits on a future, and at a bare yield (the throw path)."""

    async def cancelled_while(waiting: bool) -> str:
        await asyncio.sleep(0)  # on the loop from here on
        task = asyncio.current_task()
        assert task is not None
        try:
            if waiting:
                asyncio.get_running_loop().call_soon(task.cancel)
                await asyncio.get_running_loop().create_future()  # never resolved
            else:
                task.cancel()  # takes effect at the next yield
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            return "cancelled at the await"
        return "not cancelled"

    for waiting in (True, False):
        assert run_eagerly(cancelled_while(waiting), loop) == "cancelled at the await"


def test_a_cancellation_not_caught_cancels_the_call(loop: asyncio.AbstractEventLoop) -> None:
    finally_ran = []

    async def cancelled() -> None:
        await asyncio.sleep(0)
        task = asyncio.current_task()
        assert task is not None
        try:
            asyncio.get_running_loop().call_soon(task.cancel)
            await asyncio.get_running_loop().create_future()
        finally:
            finally_ran.append(True)

    with pytest.raises(asyncio.CancelledError):
        run_eagerly(cancelled(), loop)
    assert finally_ran == [True]


class Overlap(TypedDict):
    overlapped: bool


class Reentrant(Instrument):
    """Notices a second call entering while one is in progress (the tool yields the GIL)."""

    kind = "reentrant"
    simulated = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.inside = 0

    @tool(read_only=True)
    async def enter(self) -> Overlap:
        """Stay a moment, telling whether another call was inside meanwhile."""
        self.inside += 1
        time.sleep(0.0005)  # lets another thread run
        overlapped = self.inside > 1
        self.inside -= 1
        return {"overlapped": overlapped}


def test_synchronous_calls_from_several_threads_run_one_at_a_time() -> None:
    with Lab([Reentrant("r")]) as lab:
        results: list[Any] = []

        def calls() -> None:
            results.extend(lab.call("r_enter", {}) for _ in range(40))

        threads = [threading.Thread(target=calls, daemon=True) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads), "the calls hang"
    assert len(results) == 160
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:1]
    assert not any(r.data["overlapped"] for r in results)
