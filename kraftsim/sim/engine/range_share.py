"""Runs of committed batches replayed once for all the shadow loaders of the deep invariants.

A shadow loader (kraftsim.sim.engine.invariants) catches up with its node by replaying the
batches committed since its last check. It hands them to its loader as one commit, as
Kafka's loader gathers the batches it catches up on into one delta: the image at the end
is the same, and the images in between, which nobody compares, are not built. Another
shadow of the same software standing on the very image object the first one started from
and replaying the same batches (the same bytes) would reach the same image, since replay
is deterministic; it adopts the first one's result instead (`MetadataLoader.adopt`), run
after run, the longest kept run first. Only shadows share these runs, never the nodes,
whose results the shadows check.

A replay from the log's start (SnapshotMatchesLog) stands on images of its own once the
shadows started again from snapshot files; where kept runs start at its offset it compares
its image with theirs, and on an equal one (metadata, provenance and raft state, as
CommitShare.rebase decides for nodes) it stands on that run's image (`MetadataLoader.rebase`)
and adopts the runs from there (`rebase_onto`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from kraftsim.sim.node.commit_share import CommitShare

if TYPE_CHECKING:
    from kraftsim.image import MetadataLoader

#: Runs kept (each holds an image; the images of one history share their unchanged parts).
#: A replay from the log's start (a snapshot's check) follows the shadows' runs from the
#: empty image, one per deep check since: at a million partitions the first snapshot comes
#: some 70 operations in, and with fewer kept the oldest were gone and it replayed them all.
RUNS_KEEP = 256


class Run(NamedTuple):
    """What a loader got from replaying the batches `raws` on the image `before`."""

    before: object
    raft_before: tuple[object, object]
    raws: tuple[bytes, ...]
    delta: Any
    image: Any
    manifest: Any
    kraft_version: int | None
    voters: object | None


class RangeShare(CommitShare):
    """A CommitShare (its snapshot loads and counters) that also keeps runs of batches
    replayed as one commit, by (software, the image they started from)."""

    def __init__(self, keep: int, runs: int = RUNS_KEEP) -> None:
        super().__init__(keep=keep)
        self.runs_limit = runs
        self._runs: OrderedDict[tuple[object, int], list[Run]] = OrderedDict()
        self._run_count = 0
        #: Offsets at which a gathered replay ends a commit (and keeps a run), because
        #: other replays end there too (the nodes' snapshots: what their checks replay up to).
        self.stops: set[int] = set()
        #: The kept runs' start images, by (software, the offset they end before).
        self._starts: dict[tuple[object, int], dict[int, object]] = {}
        #: (id of a replay's image, id of a run's start image) found to differ: not compared
        #: again (a reused id only skips a rebase, which is never wrong).
        self._unequal: set[tuple[int, int]] = set()
        #: A replay's image found equal to a run's start image, by the former's id (both held:
        #: the next replay from the log's start reaches the same image object by adopting).
        self._equal: dict[int, tuple[object, object]] = {}
        #: Loaders put on a kept run's equal start image (`rebase_onto`).
        self.rebased_runs = 0

    def clear(self) -> None:
        super().clear()
        self._runs.clear()
        self._run_count = 0
        self._starts.clear()
        self._unequal.clear()
        self._equal.clear()

    def kept_runs(self) -> list[Run]:
        """Every kept run, oldest first."""
        return [run for runs in self._runs.values() for run in runs]

    def run_starts(self, software: tuple[object, ...]) -> set[int]:
        """The offsets at which kept runs of `software` start (where a replay from the log's
        start ends a commit, to rebase there: `rebase_onto`)."""
        return {offset for sw, offset in self._starts if sw == software}

    def rebase_onto(self, software: tuple[object, ...], loader: MetadataLoader, raws: Sequence[bytes],
                    start: int) -> Run | None:
        """Put `loader` (idle, on an image no kept run starts from) on a kept run's start
        image equal to its own (metadata and provenance, and the same raft state), when a
        run from there replays `raws[start:]`'s next batches; that run, or None. Two images
        are compared once: a pair found to differ is not compared again."""
        image = loader.image
        starts = self._starts.get((software, loader_offset(image)))
        if not starts:
            return None
        raft = (loader.kraft_version, loader.voters)
        known = self._equal.get(id(image))
        for before in list(starts.values()):
            pair = (id(image), id(before))
            if before is image or pair in self._unequal:
                continue
            run = self._longest_from(software, before, raft, raws, start)
            if run is None:
                continue  # (nothing to adopt from there: not worth a comparison)
            if known is None or known[0] is not image or known[1] is not before:
                if before != image:
                    self._unequal.add(pair)
                    if len(self._unequal) > self.runs_limit:
                        self._unequal.clear()
                    continue
                if len(self._equal) >= self.runs_limit:
                    self._equal.clear()
                self._equal[id(image)] = (image, before)
            loader.rebase(before)  # type: ignore[arg-type]
            self.rebased_runs += 1
            return run
        return None

    def longest(self, software: tuple[object, ...], loader: MetadataLoader, raws: Sequence[bytes],
                start: int) -> Run | None:
        """The longest kept run that `loader` (idle) can adopt: started on its image and
        raft state, and replaying `raws[start:start + k]`."""
        return self._longest_from(software, loader.image, (loader.kraft_version, loader.voters), raws, start)

    def _longest_from(self, software: tuple[object, ...], image: object, raft: tuple[object, object],
                      raws: Sequence[bytes], start: int) -> Run | None:
        runs = self._runs.get((software, id(image)))
        if not runs:
            return None
        best: Run | None = None
        room = len(raws) - start
        for run in runs:
            k = len(run.raws)
            if run.before is not image or k > room or run.raft_before != raft \
                    or (best is not None and k <= len(best.raws)):
                continue
            if all(a is b or a == b for a, b in zip(run.raws, raws[start:start + k])):
                best = run
        return best

    def keep_run(self, software: tuple[object, ...], raws: Sequence[bytes], before: object,
                 raft_before: tuple[object, object], loader: MetadataLoader) -> None:
        """Remember what `loader` got from replaying `raws` as one commit on `before`."""
        published = loader.last_publish
        assert published is not None, "only a commit that published is kept"
        delta, image, manifest = published
        delta.settle(image)  # (shadows that adopt it read no topic changes)
        key = (software, id(before))
        self._starts.setdefault((software, loader_offset(before)), {})[id(before)] = before
        self._runs.setdefault(key, []).append(Run(before, raft_before, tuple(raws), delta, image, manifest,
                                                  loader.kraft_version, loader.voters))
        self._runs.move_to_end(key)
        self._run_count += 1
        while self._run_count > self.runs_limit and self._runs:
            (sw, _), dropped = self._runs.popitem(last=False)
            self._run_count -= len(dropped)
            self._forget_start(sw, dropped[0].before)

    def _forget_start(self, software: object, before: object) -> None:
        """Drop the start image `before` of runs no longer kept (and what was found equal to it)."""
        key = (software, loader_offset(before))
        starts = self._starts.get(key)
        if starts is not None:
            starts.pop(id(before), None)
            if not starts:
                del self._starts[key]
        for image_id in [i for i, (_, b) in self._equal.items() if b is before]:
            del self._equal[image_id]


def loader_offset(image: Any) -> int:
    """The offset a loader standing on `image` replays from next."""
    return int(image.provenance.last_contained_offset) + 1


__all__ = ["RangeShare", "Run", "loader_offset"]
