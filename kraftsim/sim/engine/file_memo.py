"""Values computed from a file's bytes, computed once per file and once per content.

The deep invariants read every node's snapshot files back and compare what they load with
a replay of the node's log. A snapshot file never changes once written, and the nodes of
one cluster write files with the same bytes (or share one file through hard links), so the
value (the loaded image's digest) is remembered twice over: by the file's identity
(device, inode, size, modification time: a file rewritten or replaced gets another) and by
its content (another node's file with the same content gives the same value without being
loaded; the caller says what of the bytes counts, by default all of them, and a file's
bytes are hashed once: by what the caller names, else whole). A file whose
identity changed is read again, so a corruption planted after a check is seen at the next
one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from blake3 import blake3

from kraftsim.storage.fileio import read_file
from kraftsim.storage.snapshot import file_identity as stat_identity

T = TypeVar("T")

#: Values kept per table (each is small: a digest); emptied past it.
KEEP = 1 << 12


class FileIdentity(NamedTuple):
    """What says a file is the one seen before: same device, inode, size and mtime."""

    device: int
    inode: int
    size: int
    mtime_ns: int


def file_identity(path: Path) -> FileIdentity | None:
    """The identity of the file at `path`; None when it cannot be read (gone, unreadable)."""
    try:
        return FileIdentity(*stat_identity(path))
    except OSError:
        return None


def _whole(raw: bytes) -> Hashable:
    return len(raw), blake3(raw).digest()  # (BLAKE3: see snapshot_share.snapshot_content)


class FileMemo(Generic[T]):
    """`compute(bytes)` of files, by (file identity, context) and by (content, context).

    `context` names whatever besides the bytes the value depends on (the software that
    reads the file, the snapshot id)."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._by_file: dict[tuple[FileIdentity, Hashable], T] = {}
        self._by_bytes: dict[tuple[Hashable, Hashable], T] = {}
        self.file_hits = 0
        self.bytes_hits = 0
        self.computed = 0

    def clear(self) -> None:
        self._by_file.clear()
        self._by_bytes.clear()

    def value(self, path: Path, ident: FileIdentity | None, context: Hashable, compute: Callable[[bytes], T],
              content: Callable[[bytes], Hashable] | None = None) -> T:
        """The value for the file at `path` whose identity is `ident` (None: unknown, it is
        read and nothing is remembered by identity). The same bytes give the same value;
        `content(bytes)`, when given, names what of the bytes the value depends on (files
        that differ elsewhere share it too; it must name equal bytes alike); it may raise
        to refuse the bytes, which it then sees every time they are read."""
        if ident is not None:
            known = self._by_file.get((ident, context))
            if known is not None:
                self.file_hits += 1
                return known
        raw = read_file(path)
        # (with `content`, what it names is the key: files with the same bytes have the same
        # content, so hashing the whole bytes as well would be a second pass over them)
        key = (_whole(raw) if content is None else content(raw), context)
        value = self._by_bytes.get(key)
        if value is None:
            value = compute(raw)
            self.computed += 1
        else:
            self.bytes_hits += 1
        if len(self._by_bytes) >= self.keep:
            self._by_bytes.clear()
        self._by_bytes[key] = value
        if ident is not None and ident.size == len(raw):
            if len(self._by_file) >= self.keep:
                self._by_file.clear()
            self._by_file[(ident, context)] = value
        return value


__all__ = ["FileIdentity", "FileMemo", "file_identity"]
