"""The work queue a local master's tasks and the driver take from (kraftsim/pipeline/work_queue.py):
every position is taken once, from either end, by any number of processes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from hypothesis import given, settings, strategies as st

from kraftsim.pipeline.work_queue import WorkQueue, taken_from_front


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 30), st.lists(st.sampled_from(["front", "back", "count"]), max_size=80))
def test_each_position_is_taken_once_from_its_end(tmp_path_factory, n: int, calls: list[str]) -> None:
    path = tmp_path_factory.mktemp("q") / "queue"
    fronts: list[int] = []
    backs: list[int] = []
    with WorkQueue.create(path, n) as queue:
        for call in calls:
            if call == "count":
                queue.count_ended(1)
                continue
            pos = queue.take_front(1) if call == "front" else queue.take_back(1)
            if pos is None:
                assert len(fronts) + len(backs) == n  # empty only once everything is taken
            else:
                (fronts if call == "front" else backs).append(pos)
        front, back, ended = queue.counters()
    assert fronts == list(range(len(fronts)))  # the front in order
    assert backs == list(range(n - 1, n - 1 - len(backs), -1))  # the back in reverse
    assert not set(fronts) & set(backs)
    assert (front, back) == (len(fronts), n - len(backs))
    assert ended == len(calls)  # every call counted its one ended item


def test_the_front_taker_counts_each_item_when_it_asks_for_the_next(tmp_path: Path) -> None:
    with WorkQueue.create(tmp_path / "queue", 3) as queue:
        taken = taken_from_front(queue, ["a", "b", "c"])
        assert next(taken) == "a" and queue.counters()[2] == 0  # still running "a"
        assert next(taken) == "b" and queue.counters()[2] == 1
        assert list(taken) == ["c"]
        assert queue.counters() == (3, 3, 3)  # the last one counted at the end


def _take_all_from_front(path: str, results: "multiprocessing.Queue[list[int]]") -> None:
    with WorkQueue(path) as queue:
        mine = []
        while (pos := queue.take_front(1)) is not None:
            mine.append(pos)
        results.put(mine)


def test_processes_and_the_driver_share_the_queue_without_losing_or_doubling(tmp_path: Path) -> None:
    n = 3000
    path = str(tmp_path / "queue")
    results: multiprocessing.Queue[list[int]] = multiprocessing.get_context("fork").Queue()
    with WorkQueue.create(path, n) as queue:
        takers = [multiprocessing.get_context("fork").Process(target=_take_all_from_front, args=(path, results))
                  for _ in range(3)]
        for p in takers:
            p.start()
        driver = []
        while (pos := queue.take_back()) is not None:
            driver.append(pos)
        taken = [results.get(timeout=60) for _ in takers]
        for p in takers:
            p.join(timeout=60)
    everyone = driver + [pos for mine in taken for pos in mine]
    assert sorted(everyone) == list(range(n))
    assert all(mine == sorted(mine) for mine in taken)  # each task's positions in queue order
    assert driver == sorted(driver, reverse=True)


def test_threads_sharing_one_queue_with_another_process_take_each_position_once(tmp_path: Path) -> None:
    """The driver's threads share one WorkQueue (a taker beside the job, a progress reader)
    while the tasks' processes take from the front: a reader's shared lock must not release
    a taker's exclusive one."""
    import threading

    n = 20_000
    path = str(tmp_path / "queue")
    results: multiprocessing.Queue[list[int]] = multiprocessing.get_context("fork").Queue()
    with WorkQueue.create(path, n) as queue:
        task = multiprocessing.get_context("fork").Process(target=_take_all_from_front, args=(path, results))
        task.start()
        driver: list[int] = []
        done = threading.Event()

        def read_counters() -> None:
            while not done.is_set():
                queue.counters()

        readers = [threading.Thread(target=read_counters) for _ in range(2)]
        for r in readers:
            r.start()
        try:
            while (pos := queue.take_back()) is not None:
                driver.append(pos)
        finally:
            done.set()
            for r in readers:
                r.join()
        taken = results.get(timeout=120)
        task.join(timeout=60)
    assert sorted(driver + taken) == list(range(n))
