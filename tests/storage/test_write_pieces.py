"""Large writes reach the kernel in pieces of at most WRITE_PIECE bytes, with the same bytes.

Why it matters: a write of several MiB into new pages is cached in 2 MiB folios, which on a
VM that reports free memory to its host ran 30 times slower than the same bytes in 256 KiB
pieces (storage.fileio.WRITE_PIECE). A snapshot, a log append and the background writer all
go through these helpers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.storage import fileio
from kraftsim.storage.fileio import WRITE_PIECE, pwrite_all, write_pieces


@pytest.fixture
def pwrite_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = os.pwrite

    def spy(fd: int, data: bytes | memoryview, position: int) -> int:
        sizes.append(len(data))
        return real(fd, data, position)

    monkeypatch.setattr(fileio.os, "pwrite", spy)
    return sizes


@settings(max_examples=30, deadline=None)
@given(size=st.sampled_from([0, 1, WRITE_PIECE - 1, WRITE_PIECE, WRITE_PIECE + 1, 3 * WRITE_PIECE + 17]),
       position=st.sampled_from([0, 5, WRITE_PIECE + 3]))
def test_pwrite_all_writes_every_byte_at_its_place_in_bounded_pieces(tmp_path_factory: pytest.TempPathFactory,
                                                                     size: int, position: int) -> None:
    path = tmp_path_factory.mktemp("pieces") / "f"
    data = os.urandom(size)
    sizes: list[int] = []
    real = os.pwrite

    def spy(fd: int, piece: bytes | memoryview, at: int) -> int:
        sizes.append(len(piece))
        return real(fd, piece, at)

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fileio.os, "pwrite", spy)
        try:
            assert pwrite_all(fd, data, position) == size
        finally:
            os.close(fd)
    expected = bytes(position) + data if size else b""
    assert path.read_bytes() == expected
    assert all(n <= WRITE_PIECE for n in sizes) and sum(sizes) == size


def test_write_pieces_hands_a_file_the_bytes_in_order_in_bounded_pieces() -> None:
    data = os.urandom(3 * WRITE_PIECE + 1234)
    writes: list[int] = []

    class Recorder:
        def __init__(self) -> None:
            self.parts: list[bytes] = []

        def write(self, b: bytes | memoryview) -> int:
            writes.append(len(b))
            self.parts.append(bytes(b))
            return len(b)

    out = Recorder()
    write_pieces(out, data)  # type: ignore[arg-type]
    assert b"".join(out.parts) == data
    assert max(writes) <= WRITE_PIECE and len(writes) == 4


def test_the_background_writer_writes_in_pieces(tmp_path: Path,
                                                                    pwrite_sizes: list[int]) -> None:
    from kraftsim.storage.background_writes import _write

    path = tmp_path / "seg"
    data = os.urandom(2 * WRITE_PIECE + 99)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert _write(fd, data, 10, "seg") is None
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(10) + data
    assert pwrite_sizes and max(pwrite_sizes) <= WRITE_PIECE
