"""A temporary directory whose removal can start on another thread before it is waited for.

A scenario run keeps its cluster in a temporary directory. At a million partitions that
directory holds gigabytes of snapshot files when the run ends, and removing it took 3.5 s,
nearly all of it in the kernel (unlink gives the GIL back), while the simulation's caches,
freed right after, took another 1.1 s of Python. Started once the cluster's files are closed,
the removal runs beside that freeing; leaving the block still waits for it, so nothing is
left behind and an error is raised where it would have been.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from types import TracebackType

#: The removing thread's name (what a thread listing or a profile shows).
THREAD_NAME = "kraftsim-scratch-removal"


class Scratch:
    """`with Scratch(prefix) as scratch:` a new temporary directory, `scratch.path`, removed
    when the block ends; `remove_soon()` starts the removal on another thread once nothing
    in the directory is open any more (the block's end then waits for it)."""

    def __init__(self, prefix: str) -> None:
        self._directory = tempfile.TemporaryDirectory(prefix=prefix)
        self.path = Path(self._directory.name)
        self._remover: threading.Thread | None = None
        self._error: BaseException | None = None

    def remove_soon(self) -> None:
        """Start removing the directory and everything in it, on another thread."""
        if self._remover is None:
            self._remover = threading.Thread(target=self._remove, name=THREAD_NAME, daemon=True)
            self._remover.start()

    def _remove(self) -> None:
        try:
            self._directory.cleanup()
        except BaseException as e:  # (raised again by the thread that waits: never lost, never a thread's traceback)
            self._error = e

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._remover is None:
            self._directory.cleanup()
            return
        self._remover.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
