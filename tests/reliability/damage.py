"""Damaged copies of metadata files: the edits a disk, a bad copy or a careless hand makes.

Every edit works on bytes and returns new bytes; the originals are never written. Edits
that change a batch's header recompute its CRC, so that only the log layer's checks (not
the CRC) can tell the damage.
"""

from __future__ import annotations

import contextlib
import io
import random
import struct
from pathlib import Path
from typing import Callable

from kraftsim.protocol.batch import BatchSlice, crc32c, split_batches
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import default_registry
from kraftsim.storage.leader_epoch import write_leader_epoch_checkpoint
from kraftsim.storage.log import MetadataLog
from kraftsim.storage.quorum_state import QuorumState, write_quorum_state

REGISTRY = default_registry()
Edit = Callable[[bytes], bytes]


def slices(data: bytes) -> list[BatchSlice]:
    return [s for s in split_batches(data) if isinstance(s, BatchSlice)]


def with_crc(raw: bytes | bytearray) -> bytes:
    """The batch with its CRC-32C recomputed (Kafka's coverage: attributes to the end)."""
    b = bytearray(raw)
    b[17:21] = struct.pack(">I", crc32c(bytes(b[21:])))
    return bytes(b)


def _join(parts: list[bytes], data: bytes, ss: list[BatchSlice]) -> bytes:
    end = ss[-1].position + len(ss[-1].data) if ss else 0
    return b"".join(parts) + data[end:]


def duplicate_batch(data: bytes, i: int) -> bytes:
    ss = slices(data)
    parts = [s.data for s in ss]
    parts.insert(i + 1, ss[i].data)
    return _join(parts, data, ss)


def swap_batches(data: bytes, i: int) -> bytes:
    ss = slices(data)
    parts = [s.data for s in ss]
    parts[i], parts[i + 1] = parts[i + 1], parts[i]
    return _join(parts, data, ss)


def remove_batch(data: bytes, i: int) -> bytes:
    ss = slices(data)
    parts = [s.data for s in ss]
    del parts[i]
    return _join(parts, data, ss)


def rewrite_field(data: bytes, i: int, offset: int, fmt: str, value: int) -> bytes:
    """Set one header field of batch i (at `offset` within the batch) and recompute the CRC."""
    ss = slices(data)
    b = bytearray(ss[i].data)
    struct.pack_into(fmt, b, offset, value)
    fixed = with_crc(b) if offset >= 17 else bytes(b)
    return data[:ss[i].position] + fixed + data[ss[i].position + len(b):]


def set_base_offset(data: bytes, i: int, value: int) -> bytes:
    return rewrite_field(data, i, 0, ">q", value)


def set_epoch(data: bytes, i: int, value: int) -> bytes:
    return rewrite_field(data, i, 12, ">i", value)


def set_last_offset_delta(data: bytes, i: int, value: int) -> bytes:
    return rewrite_field(data, i, 23, ">i", value)


def flip_control(data: bytes, i: int) -> bytes:
    ss = slices(data)
    attrs = struct.unpack_from(">h", ss[i].data, 21)[0]
    return rewrite_field(data, i, 21, ">h", attrs ^ 0x20)


def flip_bit(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    pos = rng.randrange(len(b))
    b[pos] ^= 1 << rng.randrange(8)
    return bytes(b)


def zero_range(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    start = rng.randrange(len(b))
    end = min(len(b), start + rng.randint(1, 64))
    if not any(b[start:end]):
        b[start] = 0xFF
    else:
        b[start:end] = bytes(end - start)
    return bytes(b)


def set_length(data: bytes, i: int, delta: int) -> bytes:
    """Change batch i's length field (outside the CRC) by `delta`."""
    ss = slices(data)
    b = bytearray(ss[i].data)
    (length,) = struct.unpack_from(">i", b, 8)
    struct.pack_into(">i", b, 8, length + delta)
    return data[:ss[i].position] + bytes(b) + data[ss[i].position + len(b):]


# ------------------------------------------------------------------------------ kraftsim-written files


def _config(i: int) -> Payload:
    """A broker's dynamic config: every release keeps a BROKER config on replay (from 4.3 a
    topic config Kafka does not define would be dropped), and the bytes keep their size."""
    rt = REGISTRY["ConfigRecord"]
    return Payload(rt, 0, rt.new(resource_type=4, resource_name=f"t{i % 7}", name=f"k{i}", value="v" * (i % 13)))


def _feature(level: int) -> Payload:
    rt = REGISTRY["FeatureLevelRecord"]
    return Payload(rt, 0, rt.new(name="metadata.version", feature_level=level))


def build_log_dir(root: Path) -> Path:
    """A `__cluster_metadata-0` written by kraftsim: three segments, epochs 1 to 3 (a new epoch
    in the middle of a segment), a leader-change control batch per epoch, the snapshot of the
    state at the end of the last batch of epoch 2, leader-epoch-checkpoint and quorum-state
    (epoch 3). Returns the directory."""
    directory = root / "__cluster_metadata-0"
    log = MetadataLog.open(directory, segment_bytes=1000, fsync=False)
    try:
        leader_change = Payload(REGISTRY["LeaderChangeMessage"], 0,
                                REGISTRY["LeaderChangeMessage"].new(leader_id=1, voters=[], granting_voters=[]))
        n = 0
        snapshot_end = None
        for epoch in (1, 2, 3):
            log.append_records([leader_change], epoch=epoch, timestamp=1_700_000_000_000 + n, control=True)
            if epoch == 1:
                log.append_records([_feature(20)], epoch=epoch, timestamp=1_700_000_000_000)
            for _ in range(8):
                size = 1 + n % 3
                log.append_records([_config(n + k) for k in range(size)], epoch=epoch,
                                   timestamp=1_700_000_000_000 + n)
                n += size
            if epoch == 2:
                snapshot_end = log.log_end_offset
        log.flush()
        write_leader_epoch_checkpoint(directory, log.leader_epochs(), fsync=False)
        write_quorum_state(directory, QuorumState(leader_id=1, leader_epoch=3, current_voters=(1,)), fsync=False)
    finally:
        log.close()
    assert snapshot_end is not None
    # The snapshot Kafka would write at that offset, as `kraftsim snapshot create` makes it:
    # its records, header and epoch agree with the log, so a replay verifies.
    from kraftsim.cli.main import main  # the command, not a module path that may move

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["snapshot", "create", str(directory), "--at", str(snapshot_end), "-o", str(directory)])
    assert code == 0
    return directory


def flip_bit_at(data: bytes, pos: int, bit: int = 0) -> bytes:
    b = bytearray(data)
    b[pos] ^= 1 << bit
    return bytes(b)


def last_offset_delta(data: bytes, i: int) -> int:
    return struct.unpack_from(">i", slices(data)[i].data, 23)[0]
