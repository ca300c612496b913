"""Hypothesis: random valid logs with metadata transactions, cut into random batches and commits.

- Under AbortHandling.DISCARD the loader's image is the replay of every record outside an
  aborted or still-open transaction (`image_from_records`), and so is every image it
  publishes, at the offset it publishes.
- No publish point lies inside a transaction; publish offsets only grow; an image is
  batch aligned exactly when its offset ends a batch.
- Under AbortHandling.KAFKA the same holds whenever no record follows an Abort in the same
  commit (the derived case is the only difference).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.image import image_from_records
from kraftsim.image import AbortHandling, CommittedBatch, MetadataLoader
from kraftsim.protocol.entries import Payload
from tests.image.helpers import rec
from tests.image.loader_helpers import LogBuilder, Recorder, abort, begin, config, end, mv, noop

RECORDS = st.one_of(
    st.builds(config, st.sampled_from("abcd"), st.sampled_from(["1", "2", None])),
    st.builds(lambda lvl: rec("FeatureLevelRecord", name="group.version", feature_level=lvl), st.integers(0, 1)),
    st.builds(lambda n: rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=n),
              st.integers(0, 10**6)),
    st.just(noop()),
)


@dataclass
class Scenario:
    records: list[Payload]  # markers included, in log order
    batches: list[CommittedBatch]
    commits: list[list[CommittedBatch]]
    visible: list[bool]  # per record: outside an aborted or open transaction
    spans: list[tuple[int, int]]  # [begin offset, closing offset) of every transaction (open: to the end)


@st.composite
def scenarios(draw) -> Scenario:
    items = [[mv(27)]]
    kinds = ["plain"]
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            items.append(draw(st.lists(RECORDS, min_size=1, max_size=3)))
            kinds.append("plain")
        else:
            body = draw(st.lists(RECORDS, max_size=3))
            outcome = draw(st.sampled_from(["end", "abort"]))
            items.append([begin(), *body, end() if outcome == "end" else abort()])
            kinds.append(outcome)
    if draw(st.booleans()):  # a transaction still open at the end of the log
        items.append([begin(), *draw(st.lists(RECORDS, max_size=2))])
        kinds.append("open")
    records = [r for group in items for r in group]
    visible, spans, offset = [], [], 0
    for kind, group in zip(kinds, items):
        visible.extend([kind in ("plain", "end")] * len(group))
        if kind != "plain":
            spans.append((offset, offset + len(group) - 1 if kind != "open" else len(records)))
        offset += len(group)
    # cut into batches (a control batch may sit between any two), then batches into commits
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(records) - 1)), max_size=len(records))))
    log = LogBuilder()
    batches = []
    pieces = [records[a:b] for a, b in zip([0, *cuts], [*cuts, len(records)]) if a < b]
    for piece in pieces:
        if draw(st.integers(0, 5)) == 0:
            batches.append(log.leader_change())
        batches.append(log.batch(*piece, epoch=draw(st.integers(1, 3))))
    sizes = draw(st.lists(st.integers(1, 4), min_size=len(batches), max_size=len(batches)))
    commits, i = [], 0
    for size in sizes:
        if i >= len(batches):
            break
        commits.append(batches[i:i + size])
        i += size
    return Scenario(records, batches, commits, visible, spans)


def record_offsets(s: Scenario) -> list[int]:
    return [e.offset for b in s.batches for e in b.entries if not e.control]


def expected_at(s: Scenario, offset: int):
    """The image of every visible record at or below `offset`."""
    offs = record_offsets(s)
    pick = [e for e, o, v in zip(s.records, offs, s.visible) if v and o <= offset
            and e.record_type.name not in ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")]
    return image_from_records(pick)


def run(s: Scenario, handling: AbortHandling) -> tuple[MetadataLoader, Recorder]:
    r = Recorder()
    loader = MetadataLoader(abort_handling=handling)
    loader.install_publishers(r)
    loader.set_high_watermark(0)
    for commit in s.commits:
        loader.handle_commit(commit)
    return loader, r


def in_record_offsets(s: Scenario, offset: int) -> int:
    """The log offset of a record index's entry (markers included)."""
    return record_offsets(s)[offset] if offset < len(s.records) else s.batches[-1].last_offset + 1


def check_publish_points(s: Scenario, r: Recorder, *, exact: bool) -> None:
    ends = {b.last_offset for b in s.batches}
    spans = [(in_record_offsets(s, a), in_record_offsets(s, b)) for a, b in s.spans]
    assert r.offsets == sorted(set(r.offsets))
    for p in r.seen:
        assert not any(a <= p.offset < b for a, b in spans), (p.offset, spans)
        assert p.aligned == (p.offset in ends)
        if exact:
            assert p.image.same_content(expected_at(s, p.offset)), p.offset


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_discard_publishes_exactly_the_committed_records(s: Scenario) -> None:
    loader, r = run(s, AbortHandling.DISCARD)
    assert loader.faults == []
    assert loader.image.same_content(expected_at(s, s.batches[-1].last_offset))
    check_publish_points(s, r, exact=True)


def derived_case(s: Scenario) -> bool:
    """Some record follows an Abort in the same commit."""
    for commit in s.commits:
        names = [e.record_type.name for b in commit for e in b.entries if not e.control]
        if "AbortTransactionRecord" in names[:-1]:
            return True
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_kafka_abort_handling_differs_only_in_the_derived_case(s: Scenario) -> None:
    loader, r = run(s, AbortHandling.KAFKA)
    assert loader.faults == []
    check_publish_points(s, r, exact=not derived_case(s))
    if not derived_case(s):
        other, _ = run(s, AbortHandling.DISCARD)
        assert loader.image == other.image
