"""Log appends by the writer thread (storage.background_writes): whatever uses a log file
but an append sees every byte appended, the files end as foreground appends leave them, and
a failed write is reported, naming its file."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.protocol.entries import encode_data_batch
from kraftsim.storage import MetadataLog
from kraftsim.storage.background_writes import WRITES, BackgroundWrites
from kraftsim.storage.names import METADATA_DIR_NAME

from tests.cli_support import run
from tests.scenario.helpers import REPO
from tests.storage.conftest import config_payload


def _batch(base: int, sizes: list[int]) -> bytes:
    return encode_data_batch(base, [config_payload(n, name=f"k{base}") for n in sizes], epoch=1, timestamp=base)


def _digests(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(st.integers(1, 600), min_size=1, max_size=4)),
    st.tuples(st.just("truncate"), st.integers(0, 40)),
    st.tuples(st.just("reopen"), st.just(0)),
), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_a_log_appended_in_the_background_reads_and_ends_as_one_appended_at_once(tmp_path_factory: pytest.TempPathFactory,
                                                                                   ops: list[tuple[str, object]]) -> None:
    root = tmp_path_factory.mktemp("logs")
    dirs = {mode: root / mode / METADATA_DIR_NAME for mode in ("now", "later")}
    logs = {mode: MetadataLog.open(d, fsync=False, segment_bytes=2048) for mode, d in dirs.items()}
    logs["later"].background_appends = True
    try:
        for op, arg in ops:
            for mode in logs:
                log = logs[mode]
                if op == "append":
                    log.append(_batch(log.log_end_offset, arg))  # type: ignore[arg-type]
                elif op == "truncate":
                    log.truncate_to(min(arg, log.log_end_offset))  # type: ignore[type-var]
                else:
                    log.close()
                    logs[mode] = log = MetadataLog.open(dirs[mode], fsync=False, segment_bytes=2048)
                    log.background_appends = mode == "later"
            # (read through the log, with writes still queued: the file's bytes, not a kept parse)
            now, later = ([seg.read_raw(i) for seg in logs[m].segments.values() for i in range(len(seg))] for m in logs)
            assert later == now
        for log in logs.values():
            log.close()
        assert _digests(dirs["later"]) == _digests(dirs["now"])
    finally:
        for log in logs.values():
            log.close()


def test_a_failed_write_is_reported_once_naming_its_file(tmp_path: Path) -> None:
    writes = BackgroundWrites()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)  # (a write to it fails: EBADF)
    try:
        writes.submit(fd, b"batch", 0, str(path))
        with pytest.raises(KraftsimError, match=f"cannot write {path}: Bad file descriptor"):
            writes.drain()
        writes.drain()  # (reported once)
    finally:
        os.close(fd)


@contextmanager
def _opened(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        yield fd
    finally:
        os.close(fd)


def _within_a_minute(condition: Callable[[], bool]) -> bool:
    """Whether `condition` holds within a minute (a bounded wait for another thread)."""
    for _ in range(600):
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_the_writer_lives_on_after_an_unexpected_error_and_writes_what_follows(tmp_path: Path) -> None:
    writes, path = BackgroundWrites(), tmp_path / "f"
    with _opened(path) as fd:
        writes.submit(fd, b"ok", 0, str(path))
        writes.submit(fd, "?", 2, str(path))  # type: ignore[arg-type]  # (not bytes: a TypeError in the thread)
        assert _within_a_minute(lambda: not writes.pending), "the writer thread stopped"
        with pytest.raises(KraftsimError, match=f"cannot write {path}: TypeError"):
            writes.drain()
        writes.submit(fd, b"!", 2, str(path))
        writes.drain()
    assert path.read_bytes() == b"ok!"


def test_an_append_waits_for_room_while_the_writer_is_behind(tmp_path: Path) -> None:
    writes, held, path = BackgroundWrites(room=16), threading.Event(), tmp_path / "f"
    writes.before_write = lambda name: held.wait(60)
    submitted: list[int] = []
    with _opened(path) as fd:

        def append_three() -> None:
            for i in range(3):
                writes.submit(fd, bytes([ord("a") + i]) * 8, 8 * i, str(path))
                submitted.append(i)

        appender = threading.Thread(target=append_three, daemon=True)
        try:
            appender.start()
            assert _within_a_minute(lambda: len(submitted) == 2)
            time.sleep(0.3)  # (time for a third append that did not wait)
            assert submitted == [0, 1] and writes.queued_bytes == 16
        finally:
            held.set()
        appender.join(60)
        writes.drain()
    assert submitted == [0, 1, 2] and writes.queued_bytes == 0
    assert path.read_bytes() == b"a" * 8 + b"b" * 8 + b"c" * 8


def test_a_write_larger_than_the_room_goes_alone(tmp_path: Path) -> None:
    writes, path = BackgroundWrites(room=4), tmp_path / "f"
    with _opened(path) as fd:
        writes.submit(fd, b"0123456789", 0, str(path))
        writes.submit(fd, b"!", 10, str(path))
        writes.drain()
    assert path.read_bytes() == b"0123456789!"


def test_writes_land_in_the_order_submitted(tmp_path: Path) -> None:
    writes = BackgroundWrites()
    path = tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for i in range(2000):  # (each over the last, at overlapping places)
            writes.submit(fd, bytes([i % 251]) * (1 + i % 7), i // 3, str(path))
        writes.drain()
    finally:
        os.close(fd)
    expected = bytearray()
    for i in range(2000):
        data, at = bytes([i % 251]) * (1 + i % 7), i // 3
        expected[at:at + len(data)] = data
    assert path.read_bytes() == bytes(expected)


FORKED = """
import os, sys
from kraftsim.storage.background_writes import WRITES
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
WRITES.submit(fd, b"parent", 0, sys.argv[1])
WRITES.drain()
pid = os.fork()
if pid == 0:  # (the thread is not copied: the child's writes need a writer of its own)
    WRITES.submit(fd, b"child!", 6, sys.argv[1])
    WRITES.drain()
    os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_writes_through_a_writer_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "f"
    done = subprocess.run([sys.executable, "-c", FORKED, str(path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == b"parentchild!"


@pytest.mark.parametrize("scenario", ["torn-tail", "leader-crash-mid-roll", "wiped-broker-catches-up-by-snapshot"])
def test_a_simulated_cluster_is_the_same_with_appends_written_at_once(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      scenario: str) -> None:
    """Crashes (the unflushed tail cut), a torn tail, a wiped directory: the same `--json`
    line and the same files whether the nodes' appends went through the thread or were
    written at once."""
    path = str(REPO / "scenarios" / f"{scenario}.toml")

    def files(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file()}

    before = WRITES.submitted
    code, later_out, err = run(capsys, "scenario", "run", path, "--seed", "2", "--json", "--keep", str(tmp_path / "later"))
    assert code == 0, err
    submitted = WRITES.submitted
    assert submitted > before + 10  # (the nodes' appends went through the thread)
    monkeypatch.setattr("kraftsim.sim.node.simnode.BACKGROUND_APPENDS", False)
    code, now_out, err = run(capsys, "scenario", "run", path, "--seed", "2", "--json", "--keep", str(tmp_path / "now"))
    assert code == 0, err
    assert WRITES.submitted == submitted  # (none did)
    assert now_out == later_out
    assert files(tmp_path / "now") == files(tmp_path / "later")


@pytest.mark.parametrize("in_c", [True, False], ids=["one C call", "one by one"])
def test_queued_writes_land_whole_in_order_and_a_failing_one_is_named_while_the_rest_are_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_c: bool) -> None:
    from kraftsim.storage import background_writes
    from kraftsim.storage.fileio import WRITE_PIECE

    if not in_c:
        monkeypatch.setattr(background_writes, "_pwrite_each", None)
    elif background_writes._pwrite_each is None:
        pytest.skip("the C module is not built")
    good, bad = tmp_path / "a.log", tmp_path / "b.log"
    bad.write_bytes(b"")
    big = os.urandom(3 * WRITE_PIECE + 5)
    fd_bad = os.open(bad, os.O_RDONLY)  # (a write to it fails: EBADF)
    held = threading.Event()
    writes = BackgroundWrites()
    writes.before_write = lambda name: held.wait(60)  # (hold the writer so that everything queues)
    try:
        with _opened(good) as fd:
            writes.submit(fd, b"first", 0, str(good))
            writes.submit(fd, big, 5, str(good))
            writes.submit(fd_bad, b"lost", 0, str(bad))
            writes.submit(fd, b"last", 5 + len(big), str(good))
            writes.before_write = None
            held.set()
            with pytest.raises(KraftsimError, match=f"cannot write {bad}: Bad file descriptor"):
                writes.drain()
    finally:
        os.close(fd_bad)
    assert good.read_bytes() == b"first" + big + b"last"
    assert bad.read_bytes() == b""
