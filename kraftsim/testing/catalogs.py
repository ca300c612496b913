"""Hypothetical catalogs as data: a proposed next Kafka release with its own
metadata.versions, features and record versions, written as a catalog file that
`kraftsim.versions.load_catalog` and the simulator (`catalog=`) read.

A feature designer describes the proposal here (or lets `strategies.hypothetical_catalogs`
draw many), points a ClusterStateMachine at the file and asks whether every downgrade is
still safe. The file follows the catalog format of `kraftsim/versions/data/examples/kip778.toml`:
the shipped catalog plus one new release line that inherits the newest shipped one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kraftsim.testing.steps import toml_value
from kraftsim.versions import Catalog, default_catalog, load_catalog, release_key, release_line


@dataclass(frozen=True)
class NewMetadataVersion:
    """One proposed metadata.version; `metadata_changed` says whether it adds anything to
    the metadata (then a downgrade across it is lossy)."""

    metadata_changed: bool
    note: str = ""


@dataclass(frozen=True)
class NewFeatureLevel:
    level: int
    #: index into the new metadata.versions: the first at which this level is the default
    bootstrap: int
    #: index into the new metadata.versions this level needs, if any
    needs_mv: int | None = None
    #: other features' levels it needs (name -> level)
    needs: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class NewFeature:
    name: str
    levels: tuple[NewFeatureLevel, ...]


@dataclass(frozen=True)
class NewRecordType:
    """A proposed record type with versions 0..n, version i first writable at the new
    metadata.version `since[i]` (indexes; each must have metadata_changed = true)."""

    name: str
    since: tuple[int, ...]


@dataclass
class HypotheticalCatalog:
    """A proposed release line on top of `base` (default: the shipped catalog)."""

    metadata_versions: tuple[NewMetadataVersion, ...]
    features: tuple[NewFeature, ...] = ()
    records: tuple[NewRecordType, ...] = ()
    #: how many of the new metadata.versions are production ready (the rest are testing)
    production: int | None = None
    base: Catalog = field(default_factory=default_catalog)

    # --------------------------------------------------------------- names

    @property
    def base_release(self) -> str:
        return self.base.releases[-1].name

    @property
    def line(self) -> str:
        """The proposed release line ("4.6"), which names its metadata.versions: the line after
        both the base release's and its last metadata.version's (a release already lists the
        next line's first level as a placeholder, 4.4.0 lists 4.5-IV0)."""
        base = max(release_key(release_line(self.base_release)), release_key(self.base.all_metadata_versions[-1].release))
        return f"{base[0]}.{base[1] + 1}"

    @property
    def release(self) -> str:
        """The proposed release as Kafka names releases ("4.6.0")."""
        return f"{self.line}.0"

    @property
    def first_level(self) -> int:
        return self.base.all_metadata_versions[-1].level + 1

    def level(self, index: int) -> int:
        return self.first_level + index

    def version(self, index: int) -> str:
        return f"{self.line}-IV{index}"

    # --------------------------------------------------------------- the file

    def toml(self) -> str:
        lines = [f"# A hypothetical Kafka {self.release} on the shipped catalog (kraftsim.testing.catalogs).",
                 f"doc = {toml_value(f'Hypothetical release {self.release}')}"]
        if self.records:
            lines.append('record_schema_dirs = ["records"]')
        for i, mv in enumerate(self.metadata_versions):
            lines += ["", "[[metadata_versions]]", f"level = {self.level(i)}",
                      f"version = {toml_value(self.version(i))}",
                      f"metadata_changed = {toml_value(mv.metadata_changed)}",
                      f"introduced = {toml_value(mv.note or f'hypothetical metadata.version {i}')}"]
        for rec in self.records:
            lines += ["", f"[records.{rec.name}]", f"since = {toml_value(self.version(rec.since[0]))}",
                      "versions = [" + ", ".join(f"{{ since = {toml_value(self.version(s))}, version = {v} }}"
                                                 for v, s in enumerate(rec.since)) + "]"]
        for feat in self.features:
            levels = []
            for lv in feat.levels:
                deps: dict[str, str | int] = {}
                if lv.needs_mv is not None:
                    deps["metadata.version"] = self.version(lv.needs_mv)
                deps.update({name: level for name, level in lv.needs})
                entry = (f"{{ level = {lv.level}, const = {toml_value(f'L_{lv.level}')}, "
                         f"bootstrap = {toml_value(self.version(lv.bootstrap))}")
                if deps:
                    entry += f", dependencies = {toml_value(deps)}"
                levels.append(entry + " }")
            base_level = (f"{{ level = 0, const = \"L_0\", bootstrap = "
                          f"{toml_value(self.base.all_metadata_versions[0].version)} }}")
            enum = feat.name.upper().replace(".", "_")
            lines += ["", "[[features]]", f"name = {toml_value(feat.name)}", f"enum = {toml_value(enum)}",
                      f"doc = {toml_value('hypothetical feature ' + feat.name)}",
                      "levels = [" + ", ".join([base_level] + levels) + "]"]
        production = len(self.metadata_versions) if self.production is None else self.production
        lines += ["", "[[releases]]", f"name = {toml_value(self.release)}",
                  f"inherits = {toml_value(self.base_release)}"]
        if production > 0:
            lines.append(f"latest_production = {toml_value(self.version(production - 1))}")
        if self.features:
            lines.append("features = " + toml_value({f.name: max(lv.level for lv in f.levels) for f in self.features}))
        return "\n".join(lines) + "\n"

    def record_schema(self, rec: NewRecordType, api_key: int) -> str:
        """A schema file for `rec`: version v adds field `Extra<v>`."""
        hi = len(rec.since) - 1
        out = [f"name = {toml_value(rec.name)}", 'kind = "metadata"', f"api_key = {api_key}",
               f"versions = \"0-{hi}\"" if hi else 'versions = "0"', 'flexible_versions = "0+"',
               f"doc = {toml_value('hypothetical record type ' + rec.name)}",
               "", "[[fields]]", 'name = "Id"', "map_key = true", 'type = "uuid"', 'versions = "0+"',
               'doc = "Identifies one entity."']
        for v in range(1, hi + 1):
            out += ["", "[[fields]]", f'name = "Extra{v}"', 'type = "int32"', f'versions = "{v}+"',
                    f"doc = \"Added in version {v}.\""]
        return "\n".join(out) + "\n"

    def write(self, directory: str | Path, name: str = "catalog.toml") -> Path:
        """Write the catalog file (and its record schemas) into `directory`; returns its path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.records:
            from kraftsim.protocol.registry import default_registry
            used = {rt.schema.api_key for rt in default_registry().metadata_types() if rt.schema.api_key is not None}
            key = max(used) + 1
            (directory / "records").mkdir(exist_ok=True)
            for rec in self.records:
                while key in used:
                    key += 1
                (directory / "records" / f"{rec.name}.toml").write_text(self.record_schema(rec, key), encoding="utf-8")
                used.add(key)
        path = directory / name
        path.write_text(self.toml(), encoding="utf-8")
        return path

    def load(self, directory: str | Path) -> Catalog:
        """Write it into `directory` and load it (CatalogError names the rule it breaks)."""
        return load_catalog(self.write(directory))
