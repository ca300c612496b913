"""The one way the tests run a `kraftsim` command in-process: exit status, stdout, stderr;
and as a process writing to a terminal (a pty), for what a user's terminal is sent."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kraftsim.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `kraftsim ARGV...`; argparse's own exits count as statuses, and no traceback may show."""
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def on_a_terminal(*argv: str) -> tuple[int, str]:
    """`kraftsim ARGV` as a process with stdout and stderr on a pty: (exit code, text seen)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "kraftsim", *argv], stdout=follower, stderr=follower,
                          stdin=subprocess.DEVNULL, env=env, timeout=300)
    os.close(follower)
    seen = b""
    for _ in range(100_000):  # bounded: ends at EOF (EIO on Linux) long before
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.returncode, seen.decode("utf-8", "replace")


@contextmanager
def fifo_unblocked_after(fifo: os.PathLike[str] | str, seconds: float = 10.0) -> Iterator[None]:
    """Within the block, a reader left waiting on `fifo` (an open that waits for a writer, a
    read that waits for data) is let go after `seconds`: a writer opens and closes it. A test
    of a FIFO that must not be waited on then fails in bounded time instead of hanging."""
    done = threading.Event()

    def unblock() -> None:
        if not done.wait(seconds):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass

    watchdog = threading.Thread(target=unblock, daemon=True)
    watchdog.start()
    try:
        yield
    finally:
        done.set()
        watchdog.join()
