"""Jobs (``lab.start``): background tool calls with status, progress, result and cancel, on the
virtual clock and in real time (PyLabRobot's chatterbox reader, which waits with asyncio)."""

from __future__ import annotations

import time

import pytest
from faults import Slow
from pylabrobot.plate_reading import PlateReader, PlateReaderChatterboxBackend
from pylabrobot.resources import cor_96_wellplate_360uL_Fb

from labtools import Lab
from labtools.drivers.pylabrobot.plate_reader import PLRPlateReader

KINETIC = "reader_read_absorbance_kinetic"
NM405 = {"value": 405, "unit": "nanometer"}


def kinetic(interval_s: float, reads: int, wells: list[str] | None = None) -> dict:
    return {
        "plate": "plate_1",
        "wells": wells if wells is not None else ["A1", "B2"],
        "wavelength": NM405,
        "interval": {"value": interval_s, "unit": "second"},
        "reads": reads,
    }


def until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.fixture
def virtual() -> Lab:
    lab = Lab.virtual(3)
    lab.lh.move_plate("plate_1", "reader")
    yield lab
    lab.close()


@pytest.fixture
def realtime() -> Lab:
    """A reader that waits in real time between reads (no virtual clock)."""
    reader = PlateReader(
        name="reader", size_x=1, size_y=1, size_z=1, backend=PlateReaderChatterboxBackend()
    )
    reader.assign_child_resource(cor_96_wellplate_360uL_Fb(name="plate_1"))
    lab = Lab([PLRPlateReader("reader", reader)])
    yield lab
    lab.close()


def test_a_job_runs_the_tool_on_the_virtual_clock_and_reports_progress(virtual: Lab) -> None:
    world = virtual.shared["world"]
    before = world.clock.now()
    job = virtual.start(KINETIC, kinetic(120, 6))
    result = job.result(timeout=60)
    assert result.ok, result.error
    assert result.data["times"] == [120.0 * i for i in range(6)]
    assert world.clock.now() - before >= 600.0  # the instrument's time passed, virtually
    status = job.status()
    assert (status.state, status.done, status.total, status.finished) == ("completed", 6, 6, True)
    assert status.message == "read 6 of 6"
    assert job.cancel() is False  # already completed
    assert virtual.journal.events()[-1]["tool"] == KINETIC


def test_a_refused_job_has_failed_at_once_and_nothing_ran(virtual: Lab) -> None:
    clock = virtual.shared["world"].clock
    before, state = clock.now(), virtual.state()
    job = virtual.start(KINETIC, kinetic(120, 1))
    status = job.status()
    assert status.state == "failed" and status.finished
    result = job.result(timeout=0)
    assert result.error["code"] == "out_of_range" and result.error["field"] == "/reads"
    unknown = virtual.start("reader_teleport", {})
    assert unknown.result(timeout=0).error["code"] == "unknown_tool"
    assert clock.now() == before and virtual.state() == state
    assert [e["ok"] for e in virtual.journal.events()[-2:]] == [False, False]


def test_a_failing_tool_fails_its_job(virtual: Lab) -> None:
    job = virtual.start(KINETIC, {**kinetic(60, 3), "plate": "plate_2"})  # not in the reader
    result = job.result(timeout=30)
    assert job.status().state == "failed"
    assert result.error["code"] == "precondition_failed"


def test_polling_a_real_time_kinetic_read_then_cancelling_keeps_the_reads_taken(
    realtime: Lab,
) -> None:
    job = realtime.start(KINETIC, kinetic(1, 240))  # four minutes, if left alone
    seen: list[float] = []

    def advanced() -> bool:
        done = job.status().done
        if done is not None and (not seen or done > seen[-1]):
            seen.append(done)
        return len(seen) >= 2

    until(advanced, timeout=60)
    assert job.status().state == "working" and not job.status().finished
    assert job.cancel() is True
    assert job.status().state == "cancelled"  # at once
    assert job.cancel() is False
    result = job.result(timeout=30)  # stops between reads, well before the 240th
    status = job.status()
    assert status.state == "cancelled" and status.finished
    reads = len(result.data["times"])
    assert 2 <= reads < 240 and result.data["values"]["A1"] == [0.0] * reads
    assert status.message == f"stopped after {reads} of 240 reads"
    assert realtime.data(result.data["data"])["times_s"] == result.data["times"]
    # the reader is free and the lab answers as before
    after = realtime.call(
        "reader_read_absorbance", {"plate": "plate_1", "wells": ["A1"], "wavelength": NM405}
    )
    assert after.ok and after.data["values"] == {"A1": 0.0}


def test_a_job_queued_behind_another_is_dropped_when_cancelled(realtime: Lab) -> None:
    first = realtime.start(KINETIC, kinetic(1, 240))
    until(lambda: first.status().done is not None)
    second = realtime.start(KINETIC, kinetic(1, 3))
    journalled = len(realtime.journal.events())
    assert second.cancel()
    result = second.result(timeout=30)  # never waited for the first
    assert not first.status().finished
    assert result.error["code"] == "precondition_failed"
    assert "cancelled before it started" in result.error["message"]
    assert first.cancel()
    assert first.result(timeout=30).ok
    assert len(realtime.journal.events()) == journalled + 1  # the first only


def test_synchronous_calls_wait_for_the_job_holding_the_instrument(realtime: Lab) -> None:
    job = realtime.start(KINETIC, kinetic(1, 3))
    after = realtime.call(
        "reader_read_absorbance", {"plate": "plate_1", "wells": ["A1"], "wavelength": NM405}
    )
    assert job.status().finished and job.status().state == "completed"  # it went first
    assert after.ok


def test_a_cooperative_tool_stops_early_and_closing_the_lab_stops_its_jobs() -> None:
    lab = Lab([Slow("slow")])
    job = lab.start("slow_count", {"steps": 100_000})
    until(lambda: (job.status().done or 0) >= 3)
    lab.close()  # cancels what still runs and waits for it
    assert job.status().state == "cancelled" and job.status().finished
    assert 3 <= job.result(timeout=0).data["counted"] < 100_000


def test_result_times_out_while_the_job_runs(realtime: Lab) -> None:
    job = realtime.start(KINETIC, kinetic(1, 240))
    with pytest.raises(TimeoutError):
        job.result(timeout=0.05)
    job.cancel()
    assert job.result(timeout=30).ok
