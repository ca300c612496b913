"""The results of replay verification as msgspec Structs (they encode to JSON as they are,
with a stored `ok`), and `render_*`, their text form."""

from __future__ import annotations

from collections import Counter

import msgspec

# ------------------------------------------------------------------------------ results


class ImageComparison(msgspec.Struct, kw_only=True):
    """Two images that must hold the same metadata."""

    check: str  # what is being checked, e.g. "snapshot + log after it = whole log"
    left: str  # where the first image comes from
    right: str
    left_digest: str
    right_digest: str
    ok: bool
    differences: list[str] = []  # the first differing entities, "left → right"
    more_differences: int = 0  # how many more were not kept


class FieldCheck(msgspec.Struct, kw_only=True):
    """One value that must equal another (a snapshot id's epoch against the log's, ...)."""

    check: str
    expected: int | str | None
    found: int | str | None
    ok: bool


class Skipped(msgspec.Struct, kw_only=True):
    """A check that could not be made here, and why."""

    check: str
    reason: str


class SnapshotVerification(msgspec.Struct, kw_only=True):
    """Everything checked about one snapshot of a directory."""

    snapshot: str  # file name
    end_offset: int
    epoch: int
    comparisons: list[ImageComparison] = []
    fields: list[FieldCheck] = []
    skipped: list[Skipped] = []
    errors: list[str] = []
    ok: bool = True


class DirectoryVerification(msgspec.Struct, kw_only=True):
    """Replay verification of one metadata log directory."""

    path: str
    log_start_offset: int
    log_end_offset: int
    #: Whether the log goes back to offset 0 without gaps (the whole log can be replayed).
    whole_log: bool
    whole_log_digest: str | None = None
    snapshots: list[SnapshotVerification] = []
    comparisons: list[ImageComparison] = []  # directory-level ones (snapshots against each other)
    skipped: list[Skipped] = []
    gaps: list[tuple[int, int]] = []
    recovery: list[str] = []  # what Kafka's start-up recovery would cut (nothing is changed)
    errors: list[str] = []
    ok: bool = True


class RoundTrip(msgspec.Struct, kw_only=True):
    """One lower metadata.version: written there, replayed, written back, replayed."""

    target: str  # version string of the lower MV
    target_level: int
    #: "identical", "different" (a failure) or "lossy" (the writer drops data: no round trip)
    outcome: str
    #: Whether the catalog calls this downgrade lossy (some MV in between changed metadata).
    catalog_lossy: bool
    losses: list[str] = []  # for "lossy": what the writer would drop, "<kind>: <entity>"
    comparison: ImageComparison | None = None
    ok: bool = True


class RoundTripVerification(msgspec.Struct, kw_only=True):
    """Lossless downgrade then upgrade returns the same image, for every lower MV tried."""

    metadata_version: str | None
    writer_line: str
    trips: list[RoundTrip] = []
    skipped: list[Skipped] = []
    ok: bool = True


class ReplicaInfo(msgspec.Struct, kw_only=True):
    """One replica's directory as found."""

    path: str
    log_start_offset: int
    log_end_offset: int
    end_offset: int  # the log end, or the newest snapshot's end if that is further
    snapshots: list[str] = []


class ReplicaTail(msgspec.Struct, kw_only=True):
    """Records one replica holds beyond the end every replica reaches."""

    path: str
    start_offset: int
    end_offset: int  # exclusive
    records: int
    bytes: int
    record_types: dict[str, int]
    epochs: list[int]


class ReplicaVerification(msgspec.Struct, kw_only=True):
    """Replicas of one quorum, compared at every offset they all can rebuild."""

    replicas: list[ReplicaInfo]
    common_end_offset: int
    offsets: list[int] = []  # where images were compared
    comparisons: list[ImageComparison] = []
    #: First offset at which the replicas' batches differ (epoch, offsets or CRC), if any.
    diverged_at: int | None = None
    divergence: str | None = None
    tails: list[ReplicaTail] = []
    skipped: list[Skipped] = []
    errors: list[str] = []
    ok: bool = True


# ------------------------------------------------------------------------------ text


def _mark(ok: bool) -> str:
    return "OK  " if ok else "FAIL"


def _comparison_lines(c: ImageComparison, indent: str) -> list[str]:
    if c.ok:
        return [f"{indent}{_mark(True)} {c.check} (digest {c.left_digest[:16]})"]
    out = [f"{indent}{_mark(False)} {c.check}",
           f"{indent}       {c.left}: digest {c.left_digest[:16]}",
           f"{indent}       {c.right}: digest {c.right_digest[:16]}"]
    out += [f"{indent}       {d}" for d in c.differences]
    if c.more_differences:
        out.append(f"{indent}       ... and {c.more_differences} more difference(s)")
    return out


def render_directory(v: DirectoryVerification) -> list[str]:
    """The text form of a directory verification, one line per check."""
    out = [f"{_mark(v.ok)} replay verification of {v.path} (log offsets {v.log_start_offset}..{v.log_end_offset - 1}, "
           f"{len(v.snapshots)} snapshot(s))"]
    for e in v.errors:
        out.append(f"  FAIL {e}")
    for s in v.skipped:
        out.append(f"  --   {s.check}: skipped, {s.reason}")
    for sv in v.snapshots:
        out.append(f"  snapshot {sv.snapshot}")
        for c in sv.comparisons:
            out += _comparison_lines(c, "    ")
        for f in sv.fields:
            out.append(f"    {_mark(f.ok)} {f.check}: {f.found}" + ("" if f.ok else f" (log says {f.expected})"))
        for s in sv.skipped:
            out.append(f"    --   {s.check}: skipped, {s.reason}")
        for e in sv.errors:
            out.append(f"    FAIL {e}")
    for c in v.comparisons:
        out += _comparison_lines(c, "  ")
    return out


def render_roundtrip(v: RoundTripVerification) -> list[str]:
    if v.metadata_version is None:  # (nothing to round-trip: the skipped line below says why)
        out = [f"--   downgrade round trips (writer {v.writer_line})"]
    else:
        out = [f"{_mark(v.ok)} downgrade round trips from {v.metadata_version} (writer {v.writer_line})"]
    for s in v.skipped:
        out.append(f"  --   {s.check}: skipped, {s.reason}")
    same = [t.target for t in v.trips if t.outcome == "identical"]
    if same:
        out.append(f"  OK   identical after a round trip through: {', '.join(same)}")
    for t in v.trips:
        if t.outcome == "different" and t.comparison is not None:
            out += _comparison_lines(t.comparison, "  ")
        elif t.outcome == "lossy":
            note = "" if t.ok else " although the catalog calls this downgrade lossless"
            kinds = Counter(x.split(":", 1)[0] for x in t.losses)
            what = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            out.append(f"  {'--  ' if t.ok else 'FAIL'} {t.target}: not lossless for this image{note} ({what})")
    return out


def render_replicas(v: ReplicaVerification) -> list[str]:
    out = [f"{_mark(v.ok)} {len(v.replicas)} replicas, common end offset {v.common_end_offset}"]
    for r in v.replicas:
        out.append(f"  {r.path}: log {r.log_start_offset}..{r.log_end_offset - 1}, end {r.end_offset}, "
                   f"snapshots {', '.join(r.snapshots) or 'none'}")
    for c in v.comparisons:
        out += _comparison_lines(c, "  ")
    for s in v.skipped:
        out.append(f"  --   {s.check}: skipped, {s.reason}")
    if v.diverged_at is not None:
        out.append(f"  FAIL the logs diverge at offset {v.diverged_at}: {v.divergence}")
    elif v.common_end_offset > 0:
        out.append(f"  OK   the logs hold the same batches up to offset {v.common_end_offset}")
    for t in v.tails:
        types = ", ".join(f"{n} {k}" for k, n in t.record_types.items()) or "no records in the log"
        out.append(f"  tail {t.path}: offsets {t.start_offset}..{t.end_offset - 1}, {t.records} record(s), "
                   f"{t.bytes} bytes, epoch(s) {', '.join(map(str, t.epochs)) or '-'}: {types}")
    for e in v.errors:
        out.append(f"  FAIL {e}")
    return out
