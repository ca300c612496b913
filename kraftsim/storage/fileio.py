"""Small durable-file helpers: fsync a directory, write a file atomically through a temp name.

Kafka makes every metadata file durable the same way (write a temp file, force it to
disk, rename over the target, force the directory); doing it in one place keeps the
crash behaviour identical for all of them.
"""

from __future__ import annotations

import mmap
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from kraftsim.errors import KraftsimError


def fsync_dir(directory: Path) -> None:
    """Make a rename or unlink in `directory` durable (a no-op where directories can't be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, tmp_path: Path | None = None, fsync: bool = True) -> None:
    """Write `data` to `tmp_path` (default `<path>.tmp`), force it, and rename it over `path`."""
    tmp = tmp_path if tmp_path is not None else path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise KraftsimError(f"cannot write {path}: {e.strerror or e}") from None
    if fsync:
        fsync_dir(path.parent)


def read_file_in(path: Path | str, name: str) -> tuple[Path, bytes]:
    """A file given by its own path or by the directory that holds it under `name`: (its path, its bytes)."""
    p = Path(path)
    if p.is_dir():
        p = p / name
    return p, read_file(p)


class UnreadableFile(KraftsimError):
    """A file that could not be opened as a regular file: `cannot read PATH: REASON`.
    `errno` is the OS error's (None for a file that is there but not a regular file), so that a
    caller can word a missing file its own way."""

    def __init__(self, path: Path | str, reason: str, errno: int | None = None):
        super().__init__(f"cannot read {path}: {reason}")
        self.path = str(path)
        self.reason = reason
        self.errno = errno

    def __reduce__(self) -> tuple[type[UnreadableFile], tuple[str, str, int | None]]:
        return type(self), (self.path, self.reason, self.errno)


def read_file(path: Path) -> bytes:
    """Read a whole regular file, turning OS errors into one clear KraftsimError."""
    with opened_file(path) as f:
        try:
            return f.read()
        except OSError as e:
            raise KraftsimError(f"cannot read {path}: {e.strerror or e}") from None


def require_regular_file(path: Path | str) -> None:
    """UnreadableFile unless `path` is a regular file, checked before it is opened: opening a
    FIFO waits for a writer, a device such as /dev/zero never ends, a directory cannot be
    mapped. (A missing file passes: the open that follows names it.)"""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise UnreadableFile(path, e.strerror or str(e), e.errno) from None
    if not stat.S_ISREG(mode):
        raise UnreadableFile(path, "not a regular file")


@contextmanager
def opened_file(path: Path | str) -> Iterator[BinaryIO]:
    """A regular file opened for reading, failures to open it as one UnreadableFile (a
    KraftsimError); errors of the caller's own work inside the block (a closed pipe) pass
    through as they are. Anything but a regular file is refused before it is opened: a FIFO's
    open waits for a writer, and a device such as /dev/zero never ends."""
    require_regular_file(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise UnreadableFile(path, e.strerror or str(e), e.errno) from None
    with f:
        yield f


@contextmanager
def mapped_file(path: Path | str) -> Iterator[bytes | mmap.mmap]:
    """A regular file's bytes mapped read-only rather than read, for readers that need them
    by position (a segment's index is built over them): a multi-gigabyte segment costs page
    cache the kernel can take back, not the process's memory. An empty file gives b"" (a
    zero-length map is refused). Readers that walk a file once read it batch by batch from
    `opened_file` instead, which a file cut meanwhile cannot crash (a map would: SIGBUS)."""
    with opened_file(path) as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""
            return
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise KraftsimError(f"cannot read {path}: {e.strerror or e}") from None
        with mapped:
            yield mapped
