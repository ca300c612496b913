"""PySpark's worker daemon, with a quiet end for a reused worker that Spark lets go.

Spark keeps a Python worker after its task for the next one (spark.python.worker.reuse)
and closes the worker's socket when it has been idle for a minute, when the pool of idle
workers is full, or when the session stops. The worker, waiting for its next task, then
reads end-of-file, fails to write its error back on the closed socket, and PySpark's daemon
prints a BrokenPipeError traceback to the JVM's stderr, which on a local master is the
user's terminal (after `kraftsim demo`'s Spark jobs, for example).

Here each worker first waits for the first byte of its next task; when the socket closes
instead, the worker ends quietly, as PySpark ends a worker that is not reused. Everything
else is PySpark's daemon as it is. session.py names this module as
spark.python.daemon.module for local masters.

Spark forks the workers from this process, so it imports nothing that starts threads
(kraftsim.pipeline's package loads its modules on first use for that reason). A job may
name modules in KRAFTSIM_WORKER_PRELOAD (through spark.executorEnv; the sweep names the
simulator's): the daemon imports them once before its first fork, where each worker would
import them itself, and freezes them out of the cyclic collector's sight, so the workers'
collections neither scan nor copy them.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import socket

from pyspark import daemon

#: Space-separated module names the daemon imports before it forks workers.
PRELOAD_ENV = "KRAFTSIM_WORKER_PRELOAD"

_pyspark_worker = daemon.worker


def closed_before_next_task(sock: socket.socket) -> bool:
    """Wait until the JVM sends the next task or closes the socket; True when it closed it."""
    try:
        return not sock.recv(1, socket.MSG_PEEK)
    except OSError:  # reset by the JVM: closed as well
        return True


def worker(sock: socket.socket, authenticated: bool) -> int:
    """PySpark's worker loop body, unless the socket closes before a task arrives; then a
    non-zero code, on which the daemon's child waits for the close (already seen) and exits 0."""
    # While it waits, a worker ends on the daemon's SIGHUP at shutdown, as PySpark's does.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if closed_before_next_task(sock):
        return 1
    return _pyspark_worker(sock, authenticated)


def preload(names: str) -> list[str]:
    """Import the named modules (none may start a thread: tests/pipeline/test_spark_start.py
    checks the sweep's); returns those that failed to import, which a worker that needs one
    imports itself, reporting the error where PySpark reports a task's."""
    failed = []
    for name in names.split():
        try:
            importlib.import_module(name)
        except Exception:
            failed.append(name)
    gc.freeze()
    return failed


daemon.worker = worker

if __name__ == "__main__":
    preload(os.environ.get(PRELOAD_ENV, ""))
    daemon.manager()
