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

    def clear(self) -> None:
        super().clear()
        self._runs.clear()
        self._run_count = 0

    def kept_runs(self) -> list[Run]:
        """Every kept run, oldest first."""
        return [run for runs in self._runs.values() for run in runs]

    def longest(self, software: tuple[object, ...], loader: MetadataLoader, raws: Sequence[bytes],
                start: int) -> Run | None:
        """The longest kept run that `loader` (idle) can adopt: started on its image and
        raft state, and replaying `raws[start:start + k]`."""
        runs = self._runs.get((software, id(loader.image)))
        if not runs:
            return None
        image, raft = loader.image, (loader.kraft_version, loader.voters)
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
        self._runs.setdefault(key, []).append(Run(before, raft_before, tuple(raws), delta, image, manifest,
                                                  loader.kraft_version, loader.voters))
        self._runs.move_to_end(key)
        self._run_count += 1
        while self._run_count > self.runs_limit and self._runs:
            _, dropped = self._runs.popitem(last=False)
            self._run_count -= len(dropped)


__all__ = ["RangeShare", "Run"]
