"""Properties of the sequence checks of a scan (protocol.scan): a buffer of batches is
reported clean exactly when its batches follow one another and its epochs never fall."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.protocol.entries import Payload, encode_control_batch, encode_data_batch
from kraftsim.protocol.registry import default_registry
from kraftsim.protocol.scan import ScanReport, scan

REGISTRY = default_registry()
NOOP = Payload(REGISTRY["NoOpRecord"], 0, REGISTRY["NoOpRecord"].new())
LEADER_CHANGE = Payload(REGISTRY["LeaderChangeMessage"], 0,
                        REGISTRY["LeaderChangeMessage"].new(leader_id=1, voters=[], granting_voters=[]))


def batches(counts: list[int], epochs: list[int], *, leader_change_at_rise: bool = True) -> list[bytes]:
    """Data batches of NoOpRecords; where the epoch rises, a LeaderChange control batch as a
    new KRaft leader writes it first (unless told not to)."""
    out, offset, previous = [], 0, None
    for count, epoch in zip(counts, epochs):
        if leader_change_at_rise and previous is not None and epoch > previous:
            out.append(encode_control_batch(offset, [LEADER_CHANGE], epoch=epoch, timestamp=1_700_000_000_000))
            count = 1
        else:
            out.append(encode_data_batch(offset, [NOOP] * count, epoch=epoch, timestamp=1_700_000_000_000))
        offset += count
        previous = epoch
    return out


def problems(buffer: bytes) -> list[str]:
    report = ScanReport()
    for _ in scan(buffer, REGISTRY, report):
        pass
    return [p.cause for p in report.problems]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=8).flatmap(
    lambda counts: st.tuples(st.just(counts), st.permutations(range(len(counts))))))
def test_batches_in_any_order_but_their_own_are_reported(case: tuple[list[int], list[int]]) -> None:
    counts, order = case
    pieces = batches(counts, [1] * len(counts))
    found = problems(b"".join(pieces[i] for i in order))
    assert (found == []) == (list(order) == sorted(order)), found


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=8))
def test_a_falling_epoch_is_reported_and_only_then(epochs: list[int]) -> None:
    found = problems(b"".join(batches([1] * len(epochs), epochs)))
    falls = sum(b < a for a, b in zip(epochs, epochs[1:]))
    assert len([f for f in found if "is lower than the previous batch's epoch" in f]) == falls
    assert len(found) == falls


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=3, max_size=8), st.data())
def test_a_removed_or_repeated_batch_is_reported(counts: list[int], data: st.DataObject) -> None:
    pieces = batches(counts, [1] * len(counts))
    # A middle one: without its first batch a buffer only starts later (a segment's name tells
    # that, storage.checks), and without its last it is a valid, shorter log.
    i = data.draw(st.integers(1, len(pieces) - 2))
    assert problems(b"".join(pieces[:i] + pieces[i + 1:]))
    j = data.draw(st.integers(0, len(pieces) - 1))
    assert problems(b"".join(pieces[:j + 1] + [pieces[j]] + pieces[j + 1:]))

