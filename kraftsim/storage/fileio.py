"""Small durable-file helpers: fsync a directory, write a file atomically through a temp name.

Kafka makes every metadata file durable the same way (write a temp file, force it to
disk, rename over the target, force the directory); doing it in one place keeps the
crash behaviour identical for all of them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Callable, TypeVar

from kraftsim.errors import KraftsimError
from kraftsim.regular_file import opened_file

T = TypeVar("T")

#: The most one write call hands the kernel. Why: Linux caches a large write into new pages
#: in folios as large as the write allows (up to 2 MiB on ext4), and on a VM whose balloon
#: reports free 2 MiB blocks to the host (Firecracker here), each such folio is memory the
#: host must hand back before the copy goes on. Measured on this machine, 512 MiB into a
#: new file after 8 s idle: 124-157 MB/s in 2-4 MiB writes, 5.0-5.6 GB/s in 128-512 KiB
#: ones; a 128 MB snapshot was encoded and written in 1.09-1.18 s instead of 1.72-1.91 s
#: (benchmarks/results/scale-notes.md, the thirty-ninth look). Elsewhere it costs one system
#: call per 256 KiB.
WRITE_PIECE = 256 << 10


def pwrite_all(fd: int, data: bytes | memoryview, position: int) -> int:
    """Write `data` at `position` in pieces of at most WRITE_PIECE bytes; the bytes written
    (fewer than `data` only when the kernel took none of a piece)."""
    size = len(data)
    if size <= WRITE_PIECE:
        return os.pwrite(fd, data, position)
    view, done = memoryview(data), 0
    while done < size:
        n = os.pwrite(fd, view[done:done + WRITE_PIECE], position + done)
        if n <= 0:
            break
        done += n
    return done


def write_pieces(f: BinaryIO, data: bytes | memoryview) -> None:
    """`f.write(data)` in pieces of at most WRITE_PIECE bytes (see there)."""
    if len(data) <= WRITE_PIECE:
        f.write(data)
        return
    view = memoryview(data)
    for at in range(0, len(view), WRITE_PIECE):
        f.write(view[at:at + WRITE_PIECE])


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
            write_pieces(f, data)
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


def read_file(path: Path) -> bytes:
    """Read a whole regular file, turning OS errors into one clear KraftsimError."""
    return read_opened(path, lambda f: f.read())


def read_opened(path: Path, read: Callable[[BinaryIO], T]) -> T:
    """`read(f)` of the regular file `path` opened for reading, its OS errors turned into one
    clear KraftsimError (a reader that takes the file piece by piece rather than whole)."""
    with opened_file(path) as f:
        try:
            return read(f)
        except OSError as e:
            raise KraftsimError(f"cannot read {path}: {e.strerror or e}") from None
