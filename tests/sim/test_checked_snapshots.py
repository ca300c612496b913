"""A snapshot file read back is matched with a file checked whole only when it differs from
it in nothing but its batches' timestamps and CRCs, each CRC right: anything else is
checked whole, and every answer is the plain path's (`read_snapshot` then
`snapshot_content`: the same content, or the same error)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.protocol.batch import crc32c
from kraftsim.protocol.entries import Payload
from kraftsim.sim import Simulation
from kraftsim.sim.engine.checked_snapshots import CheckedSnapshots
from kraftsim.sim.node.snapshot_share import snapshot_content
from kraftsim.storage import read_snapshot
from kraftsim.storage.names import parse_snapshot_name
from kraftsim.storage.restamp import restamp_batches
from kraftsim.storage.snapshot import write_snapshot
from tests.sim.sim_helpers import failed, scratch

STAMP = 1_700_000_000_000


def _snapshot(base: Path) -> tuple[Path, bytes, list[tuple[int, int]]]:
    """A cluster's snapshot written again in small batches (several data batches) at `STAMP`:
    its path, bytes and batches (position, size)."""
    sim = Simulation.create(base / "c", controllers=1, brokers=2, release="4.0", seed=3, durable=False)
    sim.create_topics(6, 4)
    snap = read_snapshot(sim.snapshot()[0])
    sim.close()
    parsed = parse_snapshot_name(Path(snap.path).name)
    assert parsed is not None and parsed.snapshot_id is not None
    (base / "w").mkdir()
    header = [Payload(e.record_type, e.version, e.message) for e in snap.header_entries[1:]]
    path = write_snapshot(base / "w", parsed.snapshot_id, snap.payloads(), header_records=header,
                          last_contained_log_timestamp=snap.last_contained_log_timestamp, time_ms=STAMP,
                          registry=snap.registry, append_records=2, max_batch_bytes=1000, fsync=False)
    layout = [(fb.position, fb.batch.size) for fb in read_snapshot(path).batches]
    assert len(layout) > 4
    return path, path.read_bytes(), layout


def _plain(path: Path, raw: bytes) -> object:
    try:
        return snapshot_content(read_snapshot(path, data=raw))
    except KraftsimError as e:
        return (type(e), str(e))


def _checked(checker: CheckedSnapshots, path: Path, raw: bytes) -> object:
    try:
        return checker.content(path, read_snapshot(path).registry, raw)
    except KraftsimError as e:
        return (type(e), str(e))


def _recrc(raw: bytearray, pos: int, size: int) -> None:
    raw[pos + 17:pos + 21] = crc32c(bytes(raw[pos + 21:pos + size])).to_bytes(4, "big")


def _forge(raw: bytearray, pos: int, size: int, at: int) -> None:
    """Change the byte at `at` and the four after it so that the batch at `pos` keeps its
    CRC: records that differ under a right CRC, which only a comparison of the bytes
    sees. (CRC-32C is affine in the four bytes: solved over GF(2).)"""
    body = slice(pos + 21, pos + size)
    target = crc32c(bytes(raw[body]))
    raw[at] ^= 0x01
    q = at + 1
    raw[q:q + 4] = bytes(4)
    zero = crc32c(bytes(raw[body]))
    rows = []  # (the CRC change of bit i of the four bytes, the bit)
    for i in range(32):
        raw[q:q + 4] = (1 << i).to_bytes(4, "big")
        rows.append((crc32c(bytes(raw[body])) ^ zero, 1 << i))
    want, pick = target ^ zero, 0
    for bit in range(32):  # (Gaussian elimination, column by column)
        k = next((j for j in range(bit, 32) if rows[j][0] >> bit & 1), None)
        assert k is not None
        rows[bit], rows[k] = rows[k], rows[bit]
        for j in range(32):
            if j != bit and rows[j][0] >> bit & 1:
                rows[j] = (rows[j][0] ^ rows[bit][0], rows[j][1] ^ rows[bit][1])
    for bit in range(32):  # (row `bit` now changes the CRC by bit `bit` alone)
        if want >> bit & 1:
            pick ^= rows[bit][1]
    raw[q:q + 4] = pick.to_bytes(4, "big")
    assert crc32c(bytes(raw[body])) == target


def test_a_restamped_copy_is_matched_and_anything_else_is_checked_whole() -> None:
    """Each case is compared with the file checked whole it was made from."""
    with scratch() as base:
        path, raw, layout = _snapshot(base)
        registry = read_snapshot(path).registry
        first = _plain(path, raw)

        def after_raw() -> CheckedSnapshots:
            checker = CheckedSnapshots()
            assert checker.content(path, registry, raw) == first and checker.checked == 1
            return checker

        checker = after_raw()
        copy = restamp_batches(raw, STAMP, STAMP + 5_000)
        assert copy is not None and copy != raw
        assert checker.content(path, registry, copy) == first == _plain(path, copy)
        assert checker.checked == 1 and checker.matched == 1
        # A record of the copy changed, its batch's CRC made right: another content, checked whole.
        pos, size = layout[2]
        flipped = bytearray(copy)
        flipped[pos + size - 3] ^= 0x01
        _recrc(flipped, pos, size)
        checker = after_raw()
        other = checker.content(path, registry, bytes(flipped))
        assert other != first and other == _plain(path, bytes(flipped))
        assert checker.checked == 2 and checker.matched == 0
        # A record of the copy changed with its CRC kept (forged): only the bytes tell.
        forged = bytearray(copy)
        _forge(forged, pos, size, pos + size - 12)
        assert forged[pos + 17:pos + 21] == copy[pos + 17:pos + 21]
        checker = after_raw()
        other = checker.content(path, registry, bytes(forged))
        assert other != first and other == _plain(path, bytes(forged))
        assert checker.checked == 2 and checker.matched == 0
        # Restamped with a wrong time: another time under the CRCs of the first restamp.
        wrong = bytearray(restamp_batches(raw, STAMP, STAMP + 9_000) or b"")
        for pos, _ in layout:
            wrong[pos + 17:pos + 21] = copy[pos + 17:pos + 21]
        checker = after_raw()
        with pytest.raises(KraftsimError, match="Record is corrupt"):
            checker.content(path, registry, bytes(wrong))
        assert checker.matched == 0 and checker.checked == 1


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_answer_is_the_plain_paths(data: st.DataObject) -> None:
    """Over restamps to any time, a byte changed anywhere (a CRC made right or not), a file
    cut: the content (or the error) is the plain path's."""
    with scratch() as base:
        path, raw, layout = _snapshot(base)
        checker = CheckedSnapshots()
        assert _checked(checker, path, raw) == _plain(path, raw)
        for _ in range(4):
            stamp = data.draw(st.sampled_from([STAMP, STAMP + 1, STAMP - 77, 0, 2**62]))
            copy = bytearray(restamp_batches(raw, STAMP, stamp) or b"")
            change = data.draw(st.sampled_from(["none", "byte", "byte+crc", "cut"]))
            if change != "none":
                at = data.draw(st.integers(0, len(copy) - 1))
                if change == "cut":
                    del copy[at:]
                else:
                    copy[at] ^= data.draw(st.integers(1, 255))
                    if change == "byte+crc":
                        pos, size = next((p, s) for p, s in layout if p <= at < p + s)
                        if not (pos + 8 <= at < pos + 12):  # (a length changed: the layout is another)
                            _recrc(copy, pos, size)
            assert _checked(checker, path, bytes(copy)) == _plain(path, bytes(copy))
        assert checker.checked >= 1


def test_the_deep_checks_match_a_restamped_copy_and_catch_a_stale_crc() -> None:
    """In a running cluster: two nodes' snapshots replaced by another's restamped for other
    clocks, read back in one check: the first is checked whole, the second matched with it,
    and both pass; later, one whose timestamps changed under the old CRCs cannot be read."""
    with scratch() as base:
        sim = Simulation.create(base / "c", controllers=3, brokers=2, release="4.0", seed=3, durable=False)
        sim.create_topics(4, 3)
        paths = sim.snapshot()
        checked = sim.engine.checker.checked_snapshots
        raw = paths[0].read_bytes()
        stamp = read_snapshot(paths[0]).batches[0].batch.base_timestamp

        def replace(path: Path, data: bytes) -> None:
            path.unlink()  # (a file of its own, not a link of the others')
            path.write_bytes(data)

        copies = [restamp_batches(raw, stamp, stamp + k * 1_000) or b"" for k in (1, 2, 3)]
        whole, matched = checked.checked, checked.matched
        replace(paths[3], copies[0])
        replace(paths[4], copies[1])
        sim.create_topics(1, 1)
        assert not failed(sim) and (checked.checked, checked.matched) == (whole + 1, matched + 1)
        stale = bytearray(copies[1])
        stale[27:43] = raw[27:43]  # (the first batch's timestamps back, its CRC the copy's)
        replace(paths[3], copies[2])
        replace(paths[4], bytes(stale))
        sim.create_topics(1, 1)
        broken = failed(sim)
        sim.close()
    assert checked.matched == matched + 1
    assert [r.name for r in broken] == ["SnapshotMatchesLog"]
    assert "node 5's snapshot" in str(broken[0].detail) and "cannot be read" in str(broken[0].detail)
