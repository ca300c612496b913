"""`cluster import` as a function: check, read, plan, write; nothing written on refusal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftsim.errors import KraftsimError
from kraftsim.sim.importing.build import write_cluster
from kraftsim.sim.importing.plan import ImportPlan, make_plan
from kraftsim.sim.importing.sources import ImportRefused, read_source
from kraftsim.sim.importing.summary import summary_dict, summary_lines
from kraftsim.sim.node.format import new_cluster_directory_problem
from kraftsim.sim.saved import SavedState
from kraftsim.sim.simulation import POLICIES
from kraftsim.sim.types import SimConfig
from kraftsim.storage.safepath import check_output, new_directory
from kraftsim.versions import Catalog, default_catalog, load_catalog


@dataclass
class ImportResult:
    directory: Path
    plan: ImportPlan
    saved: SavedState

    def summary(self) -> dict[str, object]:
        return summary_dict(self.plan, self.saved, self.directory)

    def lines(self) -> list[str]:
        return summary_lines(self.summary())


def parse_release_overrides(values: Sequence[str]) -> tuple[str | None, dict[int, str]]:
    """`--release R` (every node) and `--release ID=R` (one node), as given on the command line."""
    everyone: str | None = None
    per: dict[int, str] = {}
    for v in values:
        if "=" in v:
            k, _, r = v.partition("=")
            try:
                per[int(k)] = r
            except ValueError:
                raise ImportRefused(f"--release {v}: expected R or ID=R with an integer node id") from None
        elif everyone is not None and everyone != v:
            raise ImportRefused(f"--release given twice for every node ({everyone}, {v})")
        else:
            everyone = v
    return everyone, per


def import_cluster(sources: Sequence[Path | str], directory: Path | str, *, voters: Sequence[int] | None = None,
                   release: str | None = None, release_overrides: Mapping[int, str] | None = None,
                   up_to_damage: bool = False, seed: int = 0, policy: str = "kafka",
                   catalog: Catalog | None = None, catalog_path: str | None = None,
                   config: SimConfig | None = None) -> ImportResult:
    """Make a simulated cluster in `directory` from the real metadata in `sources` (see the
    package docstring). ImportRefused, with nothing written, when it cannot. `catalog_path`:
    a user catalog file (hypothetical releases or versions) the cluster keeps using."""
    d = Path(directory)
    if policy not in POLICIES:
        raise ImportRefused(f"unknown policy {policy!r}; known policies: {', '.join(POLICIES)}")
    if not sources:
        raise ImportRefused("no source given")
    try:  # (a target inside a source is named as such before the general rule below)
        check_output(d, sources, flag="DIR")
    except KraftsimError as e:
        raise ImportRefused(str(e)) from None
    if (problem := new_cluster_directory_problem(d)) is not None:
        raise ImportRefused(problem)
    try:
        cat = catalog or (load_catalog(catalog_path) if catalog_path else default_catalog())
    except KraftsimError as e:
        raise ImportRefused(str(e)) from None
    read = [read_source(Path(s), cat, up_to_damage=up_to_damage) for s in sources]
    plan = make_plan(read, cat, voters=voters, release=release, releases=release_overrides)
    with new_directory(d, locked=True):  # no other command sees it half written; a failure leaves none
        saved = write_cluster(plan, d, seed=seed, policies=() if policy == "kafka" else (policy,),
                              config=config, catalog_path=catalog_path)
    return ImportResult(d, plan, saved)


__all__ = ["ImportResult", "import_cluster", "parse_release_overrides"]
