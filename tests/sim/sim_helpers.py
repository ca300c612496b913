"""Helpers for the event-simulation tests: fast scratch directories, many seeds, failing invariants."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kraftsim.sim import InvariantResult, SimConfig, Simulation

#: Seeds per fault scenario (Kafka's RaftEventSimulationTest runs its scenarios over many seeds too).
SEEDS = range(100)


@contextmanager
def scratch() -> Iterator[Path]:
    """A scratch directory, in memory where the machine has /dev/shm (these tests write many small files)."""
    base = "/dev/shm" if Path("/dev/shm").is_dir() else None
    d = Path(tempfile.mkdtemp(prefix="kraftsim-sim-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def failed(sim: Simulation) -> list[InvariantResult]:
    return [r for r in sim.invariants() if not r.ok]


def over_seeds(scenario: Callable[[Simulation], None], *, seeds=SEEDS, config: SimConfig | None = None,
               **create: object) -> dict[int, Simulation]:
    """Run `scenario` on a fresh cluster per seed; every invariant must hold after every event.
    Returns nothing kept open: each simulation is closed after its scenario."""
    params = {"controllers": 3, "release": "4.1", **create}
    with scratch() as base:
        for seed in seeds:
            sim = Simulation.create(base / f"s{seed}", seed=seed, config=config, durable=False, **params)
            try:
                scenario(sim)
                bad = failed(sim)
                assert not bad, f"seed {seed}: {bad}"
            except Exception as e:
                raise AssertionError(f"seed {seed}: {e}") from e
            finally:
                sim.close()
    return {}


def tree_digest(directory: Path) -> str:
    """A digest of every file's relative path and bytes under `directory`."""
    h = hashlib.sha256()
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(directory)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@contextmanager
def loader_drops_topic_commits(node: object) -> Iterator[None]:
    """A broken loader, injected by a test: `node`'s loader skips every commit that creates a
    topic but counts it as applied, whether it replays the commit or adopts the image another
    node made of it (nodes share the images of commits they apply alike)."""
    from kraftsim.image import MetadataLoader

    original, original_adopt = MetadataLoader.handle_commit, MetadataLoader.adopt

    def lossy(self, batches, **kw):  # type: ignore[no-untyped-def]
        batches = list(batches)
        if self is node.loader and any(e.record_type.name == "TopicRecord"  # type: ignore[attr-defined]
                                       for b in batches for e in b.entries):
            self._last_offset = batches[-1].last_offset  # skipped, but counted as applied
            return
        original(self, batches, **kw)

    def lossy_adopt(self, delta, image, manifest, **kw):  # type: ignore[no-untyped-def]
        if self is node.loader and len(image.topics) > len(self.image.topics):  # type: ignore[attr-defined]
            self._last_offset = manifest.provenance.last_contained_offset
            return
        original_adopt(self, delta, image, manifest, **kw)

    MetadataLoader.handle_commit = lossy  # type: ignore[method-assign]
    MetadataLoader.adopt = lossy_adopt  # type: ignore[method-assign]
    try:
        yield
    finally:
        MetadataLoader.handle_commit = original  # type: ignore[method-assign]
        MetadataLoader.adopt = original_adopt  # type: ignore[method-assign]
