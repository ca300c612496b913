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
