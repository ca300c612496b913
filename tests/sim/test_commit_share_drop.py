"""CommitShare.drop_below forgets exactly the kept commits of batches ending below the offset."""

from __future__ import annotations

from kraftsim.image import CommittedBatch, MetadataLoader
from kraftsim.protocol.entries import LogEntry
from kraftsim.sim.node.commit_share import CommitShare
from tests.image.helpers import rec


def _loader_after(offset: int) -> MetadataLoader:
    """A loader that published one commit (what `keep` records) ending at `offset`."""
    r = rec("FeatureLevelRecord", name="metadata.version", feature_level=21)
    loader = MetadataLoader(clock_ns=lambda: 0)
    loader.set_high_watermark(offset + 1)
    loader.handle_commit([CommittedBatch(offset, offset, 1, 0, 10,
                                         [LogEntry(offset, 1, 0, False, r.record_type, r.version, r.message)])])
    return loader


def test_drop_below_forgets_only_batches_ending_below_the_offset() -> None:
    share = CommitShare()
    software = ("4.0", False, 1)
    loaders = {}
    for base, last in ((0, 9), (10, 19), (20, 29)):
        loader = loaders[base] = _loader_after(last)
        share.keep(software, (base, last, 1, 123), None, (0, None), loader)
    share.keep(software, b"raw batch bytes", None, (0, None), loaders[0])  # (a key without offsets: kept)
    assert share.drop_below(20) == 2
    assert set(share.kept()) == {(software, (20, 29, 1, 123)), (software, b"raw batch bytes")}
    assert share.drop_below(20) == 0 and share.drop_below(29) == 0 and share.drop_below(30) == 1


def test_drop_below_finds_commits_kept_out_of_order_evicted_and_kept_again() -> None:
    """Batches kept in any order (a node of another software replaying older ones later),
    evicted by the limit and kept again: drop_below forgets exactly those ending below the
    offset, as a scan of every kept commit would."""
    share = CommitShare(keep=3)
    software = ("4.0", False, 1)
    loaders = {last: _loader_after(last) for last in (9, 19, 29, 39, 49)}

    def keep(base: int, last: int) -> None:
        share.keep(software, (base, last, 1, 123), None, (0, None), loaders[last])

    for base, last in ((40, 49), (0, 9), (30, 39), (10, 19)):  # (the first one is evicted by the limit)
        keep(base, last)
    assert [k[1][1] for k in share.kept()] == [9, 39, 19]
    keep(40, 49)  # (kept again: evicts (0, 9))
    assert share.drop_below(20) == 1 and [k[1][1] for k in share.kept()] == [39, 49]
    assert share.drop_below(45) == 1 and share.drop_below(50) == 1 and not share.kept()
    for _ in range(20):  # (kept and dropped over and over, past the index's rebuild: nothing is left)
        keep(20, 29)
        share.drop_below(30)
    assert not share.kept() and share.drop_below(10**9) == 0
