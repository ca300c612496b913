"""The loader on real Kafka logs (../shared/oracle).

- kafka-3.7.0_ldipoc and kafka-4.1_dkoh12 begin with the bootstrap records inside a
  metadata transaction (Begin, FeatureLevelRecords, ..., End): no publish point may fall
  inside it, however the batches are grouped into commits.
- For every set with a log and a Kafka snapshot at offset O, loading the log up to O and
  loading Kafka's snapshot give the same digest and the same provenance.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.image import image_digest
from kraftsim.image import AbortHandling, CommittedBatch, MetadataLoader, TransactionState
from kraftsim.image import load_path
from kraftsim.storage import MetadataLog
from kraftsim.storage.batchfile import decode_file_batch
from tests.conftest import ORACLE
from tests.image.helpers import needs_oracle, oracle_snapshot_pairs, rel
from tests.image.loader_helpers import Recorder

pytestmark = needs_oracle

# set -> (offset of the BeginTransactionRecord, offset of the EndTransactionRecord, metadata.version)
BOOTSTRAP_TX = {"kafka-3.7.0_ldipoc": (1, 4, 19), "kafka-4.1_dkoh12": (1, 7, 27)}


def committed_batches(directory: Path) -> list[CommittedBatch]:
    with MetadataLog.open(directory, read_only=True) as log:
        return [CommittedBatch(fb.batch.base_offset, fb.batch.last_offset, fb.batch.partition_leader_epoch,
                               fb.batch.max_timestamp, fb.batch.size, decode_file_batch(fb)) for fb in log.batches()]


@pytest.mark.parametrize("per_commit", [1, 2, 3, 16])
@pytest.mark.parametrize("name", sorted(BOOTSTRAP_TX))
def test_bootstrap_transaction_is_never_exposed(name: str, per_commit: int) -> None:
    begin_at, end_at, level = BOOTSTRAP_TX[name]
    batches = committed_batches(ORACLE / name / "__cluster_metadata-0")
    r = Recorder()
    loader = MetadataLoader()
    loader.install_publishers(r)
    loader.set_high_watermark(0)
    for i in range(0, len(batches), per_commit):
        loader.handle_commit(batches[i:i + per_commit])
    assert loader.faults == [] and loader.transaction_state is TransactionState.NO_TRANSACTION
    assert not any(begin_at <= o < end_at for o in r.offsets)
    first = r.seen[0]
    assert first.offset >= end_at and first.image.metadata_version == level
    # every image published is a prefix of the log: its offset ends a batch or precedes a Begin
    ends = {b.last_offset for b in batches}
    assert all(p.offset in ends for p in r.seen if p.aligned)
    assert image_digest(loader.image) == image_digest(load_path(ORACLE / name, snapshot="none").image)


@pytest.mark.parametrize("handling", list(AbortHandling))
@pytest.mark.parametrize("name", sorted(BOOTSTRAP_TX))
def test_load_path_through_the_bootstrap_transaction(name: str, handling: AbortHandling) -> None:
    digests = set()
    for per_commit in (1, 2, 5):
        res = load_path(ORACLE / name, snapshot="none", batches_per_commit=per_commit, abort_handling=handling)
        assert res.faults == [] and res.loader.caught_up
        assert res.image.metadata_version == BOOTSTRAP_TX[name][2]
        assert res.image.provenance.last_contained_offset == res.end_offset - 1
        digests.add(image_digest(res.image))
    assert len(digests) == 1


def test_load_path_up_to_inside_the_bootstrap_transaction_shows_nothing_of_it() -> None:
    res = load_path(ORACLE / "kafka-4.1_dkoh12", snapshot="none", upto_offset=4)
    assert res.loader.transaction_state is TransactionState.CONTINUED
    assert res.image.metadata_version is None and res.image.is_empty()


PAIRS = [(s, log, o) for s, log, o in oracle_snapshot_pairs() if log is not None]


@pytest.mark.parametrize("snap,log,offset", PAIRS, ids=[rel(s) for s, _, _ in PAIRS])
def test_log_up_to_a_kafka_snapshot_equals_the_snapshot(snap: Path, log: Path, offset: int) -> None:
    from_log = load_path(log.parent, upto_offset=offset, snapshot="none")
    from_snapshot = load_path(snap)
    assert image_digest(from_log.image) == image_digest(from_snapshot.image)
    assert from_log.image.provenance == from_snapshot.image.provenance
