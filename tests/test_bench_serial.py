"""bench/serial.py's accounting: which intervals are serial, and the step each goes to."""
from __future__ import annotations

import pytest

from .conftest import script_module


@pytest.fixture(scope="module")
def serial():
    """bench/serial.py as a module (bench/ is not a package)."""
    return script_module("bench", "serial")


MAIN, FAMILY, WORKER = 100, 101, 200  # thread ids: rpp's main thread and a family's; a worker
RUN = {
    "pid": MAIN, "process_wall": 10.0,
    "events": [  # (step, thread name, start, end, thread id)
        ("startup", "MainThread", 0.0, 1.0, MAIN),
        ("rpp main", "MainThread", 1.0, 9.0, MAIN),
        ("pipeline.read_qrels", "MainThread", 1.0, 3.0, MAIN),
        ("pipeline.measure", "MainThread", 3.0, 8.0, MAIN),
        ("family trec", "rpp-measures-0", 3.0, 8.0, FAMILY),
        ("wait for workers: evaluate_shard", "rpp-measures-0", 4.0, 8.0, FAMILY),
    ],
    # (time, cores busy since the sample before, runnable "pid/tid")
    "samples": [(1.0, 1.0, [f"{MAIN}/{MAIN}"]),    # startup: serial
                (3.0, 1.0, [f"{MAIN}/{MAIN}"]),    # reading the qrels: serial
                (4.0, 1.0, [f"{MAIN}/{FAMILY}"]),  # the family's own work: serial
                (6.0, 2.0, [f"{WORKER}/{WORKER}", f"{WORKER + 1}/{WORKER + 1}"]),  # parallel
                (8.0, 1.0, [f"{WORKER}/{WORKER}"]),  # the last shard alone: serial
                (10.0, 0.5, [])],  # after rpp's main: exit
}


def test_serial_intervals_go_to_the_runnable_threads_innermost_step(serial):
    steps = serial.serial_steps(RUN, 1.2, "runnable")
    assert steps == {"startup": 1.0, "pipeline.read_qrels": 2.0, "family trec": 1.0,
                     "wait for workers: evaluate_shard": 2.0, "exit": 1.0, "rpp main": 1.0}


def test_serial_cpu_is_the_cores_used_in_serial_intervals(serial):
    steps = serial.serial_steps(RUN, 1.2, "runnable", cpu=True)
    assert steps["exit"] == 0.5 and steps["pipeline.read_qrels"] == 2.0
    assert sum(steps.values()) == pytest.approx(7.0)  # 8 s serial, 1 of them at half a core
    assert serial.cpu_seconds(RUN) == pytest.approx(11.0)


def test_by_cpu_counts_intervals_below_the_cores(serial):
    steps = serial.serial_steps(RUN, 1.2, "cpu")
    assert "wait for workers: evaluate_shard" in steps and sum(steps.values()) == 8.0


def test_step_totals_are_exclusive_wall_of_the_latest_begun_call(serial):
    totals = serial.step_totals(RUN)
    assert totals["wait for workers: evaluate_shard"] == 4.0
    assert totals["family trec"] == 1.0 and totals["pipeline.measure"] == 0.0
    assert sum(totals.values()) == pytest.approx(10.0)
