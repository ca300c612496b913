"""Reading a scenario file into checked structs, before anything runs.

Every problem is a ScenarioInvalid naming the file, the step, the key and what was
expected. Checks beyond the types: releases, metadata.versions and feature names against
the catalog (the shipped one, or the file's `catalog = "path.toml"`), node ids against
the cluster as the steps change it (`add-node`), and the shape of `[cluster]`.

Names the Kafka tools check themselves (a metadata.version or feature given to
kafka-features) are checked here only for steps without `expect_error`: a step that
expects the tool's refusal may carry what the tool refuses.
"""

from __future__ import annotations

import re
import tomllib
import typing
import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, TypeVar, cast

import msgspec

from kraftsim import tomlinput
from kraftsim.errors import KraftsimError
from kraftsim.scenario import recorded_failure
from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.header import Header, parse_header
from kraftsim.scenario.language import (
    DISK_FAULTS, ELECTION_TYPES, SCRAM_MECHANISMS, MAX_NODES_PER_ROLE, MAX_PARTITIONS, MAX_REPLICATION, MAX_TOPICS, NODE_GROUPS, POLICIES, ROLES,
    ClusterSpec, Expect, Limits, NodeSel, RecordedFailure, ScenarioTop,
)
from kraftsim.scenario.ops import (
    OPS, AddController, AddNode, AlterBrokerConfig, AlterClientMetrics, AlterClientQuotas, AlterGroupConfig, AlterScramCredentials, AlterTopicConfig,
    CreatePartitions, CreateTopics, DiskFault, ElectLeaders, FeaturesChange, FeaturesDisable, NodesStep,
    Partition, ReassignPartitions, RemoveController, Roll, Run, Snapshot, Start, Step, UnregisterBroker,
    UnregisterController, Wait,
)
from kraftsim.sim import created_roles
from kraftsim.storage.meta_properties import MAX_NODE_ID
from kraftsim.storage.server_config import validate_node_configs
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, load_catalog

#: The choices of keys whose values are a fixed set, for error messages.
CHOICES = {"policy": POLICIES, "kind": DISK_FAULTS, "role": ROLES, "election_type": ELECTION_TYPES}
_TYPE_WORDS = {"int": "an integer", "str": "a string", "bool": "true or false", "array": "a list",
               "object": "a table", "float": "a number"}
_MSGSPEC = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


@dataclass
class Scenario:
    """A checked scenario: what the runner needs, with releases resolved to catalog names."""

    path: Path
    name: str
    description: str
    seed: int
    policy: str
    catalog: Catalog
    catalog_path: Path | None
    cluster: ClusterSpec
    steps: list[Step]
    expect: Expect
    header: Header = field(default_factory=Header)
    config: dict[str, int | float] = field(default_factory=dict)
    #: node id -> roles at the start
    nodes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: `[recorded_failure]`: the state machine's failure this file reproduces, if any
    recorded_failure: RecordedFailure | None = None


def _words(text: str) -> str:
    """msgspec's `Expected `int`, got `str`` in plain words."""
    def word(m: re.Match[str]) -> str:
        kinds = [k for k in m.group(1).split(" | ") if k != "null"] or ["nothing"]
        return " or ".join(_TYPE_WORDS.get(k, k) for k in kinds)
    return re.sub(r"`([^`]+)`", word, text[0].lower() + text[1:])


def _known_keys(cls: type) -> list[str]:
    tag = cls.__struct_config__.tag_field  # type: ignore[attr-defined]  # `op`, an op's tag
    return ([tag] if tag else []) + [f.encode_name for f in msgspec.structs.fields(cls)]


T = TypeVar("T")


def _convert(raw: object, cls: type[T], file: str, *, step: int | None = None, prefix: str = "") -> T:
    """msgspec.convert with its complaint turned into one line naming the key."""
    try:
        return msgspec.convert(raw, type=cls)
    except msgspec.ValidationError as e:
        m = _MSGSPEC.match(str(e))
        msg, path = (m.group("msg"), m.group("path") or "") if m else (str(e), "")
        key = re.sub(r"\[(\d+)\]", lambda g: f"[{int(g.group(1))}]", path.lstrip("."))
        unknown = re.match(r"Object contains unknown field `([^`]+)`", msg)
        missing = re.match(r"Object missing required field `([^`]+)`", msg)
        owner = _owner(cls, key)
        if unknown:
            full: str | None = ".".join(p for p in (prefix, key, unknown.group(1)) if p)
            known = ", ".join(_known_keys(owner)) if owner else ""
            raise ScenarioInvalid(file, full, "unknown key" + (f"; known keys here: {known}" if known else ""),
                                  step) from None
        if missing:
            full = ".".join(p for p in (prefix, key, missing.group(1)) if p)
            raise ScenarioInvalid(file, full, "required key is missing", step) from None
        if key.endswith("[...]"):  # a value inside a table such as `features`: name its key
            key = key[:-5] + _bad_table_key(raw, key[:-5], msg)
        full = ".".join(p for p in (prefix, key) if p) or None
        leaf = key.rsplit(".", 1)[-1].split("[", 1)[0]
        if msg.startswith("Invalid enum value") and leaf in CHOICES:
            raise ScenarioInvalid(file, full, f"expected one of {', '.join(CHOICES[leaf])}, {msg[19:].strip()} given",
                                  step) from None
        raise ScenarioInvalid(file, full, _words(msg), step) from None


_GOT = {"str": str, "int": int, "float": float, "bool": bool, "array": list, "object": dict}


def _bad_table_key(raw: object, path: str, msg: str) -> str:
    """".name" of the first entry of the table at `path` whose value has the type msgspec got."""
    table = raw
    for part in [p for p in path.split(".") if p]:
        table = table.get(part) if isinstance(table, dict) else None
    got = re.search(r"got `([^`]+)`", msg)
    kind = _GOT.get(got.group(1)) if got else None
    if isinstance(table, dict) and kind is not None:
        for k, v in table.items():
            if isinstance(v, kind) and not (kind is int and isinstance(v, bool)):
                return f".{k}"
    return ""


def _owner(cls: type, key: str) -> type | None:
    """The struct that holds the last part of a dotted key (for listing its known keys)."""
    owner: type | None = cls
    for part in [p for p in key.split(".") if p]:
        f = next((f for f in msgspec.structs.fields(owner) if f.encode_name == part), None) if owner else None
        t = getattr(f, "type", None)
        candidates = (t, *typing.get_args(t))  # `Expect | None` holds its struct among its arguments
        owner = next((c for c in candidates if isinstance(c, type) and issubclass(c, msgspec.Struct)), None)
    return owner


def resolve_release(catalog: Catalog, name: str) -> str | None:
    """The catalog's name for a release given as Kafka names it ("3.7.2") or as its line ("3.7").

    A line means its newest patch release. The catalog may name release lines only (no
    patch releases by name yet): then a patch release runs as its line, whose behaviour is
    the line's newest patch's; that is the closest the catalog can say. None if unknown."""
    names = [r.name for r in catalog.releases]
    if name in names:
        return name
    patches = [n for n in names if n.startswith(name + ".")]
    if patches:
        return patches[-1]  # releases are listed oldest first
    m = re.match(r"^(\d+\.\d+)\.\d+$", name)
    if m and m.group(1) in names:
        return m.group(1)
    return None


def mv_level(catalog: Catalog, text: str | int) -> int | None:
    """The level of a metadata.version given by name ("3.8-IV0", "3.8", "3.8.1") or level,
    including levels newer release lines no longer know (3.0-IV1..3.3-IV2); None if unknown."""
    try:
        return catalog.metadata_version(text).level
    except KraftsimError:
        pass
    for mv in catalog.all_metadata_versions:
        if mv.version == text or mv.level == text:
            return mv.level
    return None


class _Checker:
    """Semantic checks over one file, tracking the node set as steps add nodes."""

    def __init__(self, file: str, catalog: Catalog, nodes: dict[int, tuple[str, ...]] | None):
        self.file = file
        self.catalog = catalog
        self.nodes = nodes  # None: not known before running (a cluster imported with `from`)
        self.releases = ", ".join(r.name for r in catalog.releases)
        self.limits = Limits()

    def fail(self, key: str | None, expected: str, step: int | None = None) -> ScenarioInvalid:
        return ScenarioInvalid(self.file, key, expected, step)

    def release(self, name: str, key: str, step: int | None = None) -> str:
        resolved = resolve_release(self.catalog, name)
        if resolved is None:
            raise self.fail(key, f"unknown release {name!r}; the catalog knows {self.releases} "
                                 "(a release as Kafka names it, e.g. 3.7.2, or its line, e.g. 3.7)", step)
        return resolved

    def mv(self, text: str | int, key: str, step: int | None = None, release: str | None = None) -> None:
        """A metadata.version the catalog knows (as seen by `release`'s line, when given)."""
        catalog = self.catalog.at_release(release) if release is not None else self.catalog
        try:
            catalog.metadata_version(text)
        except KraftsimError:
            known = ", ".join(mv.version for mv in catalog.metadata_versions)
            raise self.fail(key, f"unknown metadata.version {text!r}; known: {known}", step) from None

    def feature(self, name: str, key: str, step: int | None = None) -> None:
        if name == MV_NAME:
            return
        try:
            self.catalog.feature(name)
        except KraftsimError:
            known = ", ".join([MV_NAME] + [f.name for f in self.catalog.features])
            raise self.fail(key, f"unknown feature {name!r}; known: {known}", step) from None

    def ids(self, ids: Iterable[int], key: str, step: int | None = None) -> None:
        if self.nodes is None:
            return
        for i in ids:
            if i not in self.nodes:
                have = ", ".join(str(n) for n in sorted(self.nodes))
                raise self.fail(key, f"node {i} does not exist (the cluster's nodes are {have})", step)

    def selector(self, sel: NodeSel | None, key: str, step: int) -> None:
        if sel is None:
            return
        if isinstance(sel, str):
            if sel == "leader" and key == "nodes" and self.nodes is not None and not any(
                    "controller" in roles for roles in self.nodes.values()):
                raise self.fail(key, "expected a cluster with controllers for \"leader\"", step)
            if sel not in NODE_GROUPS:
                raise self.fail(key, f"expected one of {', '.join(NODE_GROUPS)} or a list of node ids, "
                                     f"{sel!r} given", step)
            return
        if not sel:
            raise self.fail(key, "expected at least one node id", step)
        if len(set(sel)) != len(sel):
            raise self.fail(key, "a node id is listed twice", step)
        self.ids(sel, key, step)

    def duration(self, value: int, key: str, step: int, minimum: int) -> None:
        """Simulated milliseconds of one step, within [limits] step_ms."""
        self.non_negative(value, key, step, minimum)
        if value > self.limits.step_ms:
            raise self.fail(key, f"expected at most {self.limits.step_ms:,} simulated ms in one step, got {value:,} "
                                 f"({_raise_it('step_ms')})", step)

    def non_negative(self, value: int | None, key: str, step: int | None = None, minimum: int = 0,
                     maximum: int | None = None, why: str = "") -> None:
        """`value` within [minimum, maximum]; `why` says what the maximum is when it is not obvious."""
        if value is not None and value < minimum:
            raise self.fail(key, f"expected an integer >= {minimum}, got {value}", step)
        if value is not None and maximum is not None and value > maximum:
            raise self.fail(key, f"expected an integer <= {maximum:,}{why}, got {value:,}", step)


def initial_nodes(cluster: ClusterSpec) -> dict[int, tuple[str, ...]]:
    """Node ids as `cluster create` numbers them: combined 1..N, then controllers, then brokers."""
    return created_roles(combined=cluster.combined, controllers=cluster.controller_count, brokers=cluster.brokers)


def parse_scenario(text: str, file: str, base_dir: Path | None = None) -> Scenario:
    """Check a scenario given as text (`file` names it in messages; `base_dir` resolves
    relative paths, default the current directory)."""
    base = base_dir or Path(".")
    try:
        raw = tomlinput.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioInvalid(file, None, f"not valid TOML: {e}") from None
    except tomlinput.TomlTooComplex as e:
        raise ScenarioInvalid(file, None, str(e)) from None
    if "step" in raw and isinstance(raw["step"], dict):
        raise ScenarioInvalid(file, "step", "expected an array of tables: write each step as [[step]], not [step]")
    top: ScenarioTop = _convert(raw, ScenarioTop, file)
    if not top.name.strip():
        raise ScenarioInvalid(file, "name", "expected a non-empty name")
    catalog_path = None
    if top.catalog is not None:
        catalog_path = (base / top.catalog).resolve()
        if not catalog_path.is_file():
            what = "is not a file" if catalog_path.exists() else "does not exist"  # (a folder, a device)
            raise ScenarioInvalid(file, "catalog", f"expected a catalog file; {top.catalog} {what}")
        try:
            catalog = load_catalog(catalog_path)
        except (KraftsimError, OSError) as e:
            raise ScenarioInvalid(file, "catalog", f"expected a valid catalog file: {e}") from None
    else:
        catalog = load_catalog(None)
    cluster = _check_cluster(top.cluster, _Checker(file, catalog, None), base)
    check = _Checker(file, catalog, None if cluster.from_ is not None else initial_nodes(cluster))
    start_nodes = dict(check.nodes or {})
    _check_limits(top, check)
    steps = [_check_step(raw_step, i, check) for i, raw_step in enumerate(top.step, start=1)]
    _check_totals(steps, top.limits, check)
    _check_expect(top.expect, check)
    _check_config(top.config, file)
    recorded_failure.check(top.recorded_failure, file)
    return Scenario(path=base / Path(file).name, name=top.name, description=top.description, seed=top.seed,
                    policy=top.policy, catalog=catalog, catalog_path=catalog_path, cluster=cluster, steps=steps,
                    expect=top.expect, header=parse_header(text), config=dict(top.config), nodes=start_nodes,
                    recorded_failure=top.recorded_failure)


def _raise_it(key: str) -> str:
    return f"the limit is [limits] {key}; raise it in the file (e.g. [limits] {key} = N) if you mean it"


def _check_limits(top: ScenarioTop, check: _Checker) -> None:
    """`[limits]` themselves, then the number of steps (before any step is looked at)."""
    for key in ("step_ms", "steps", "topics", "partitions"):
        check.non_negative(getattr(top.limits, key), f"limits.{key}", None, 1)
    if len(top.step) > top.limits.steps:
        raise check.fail("step", f"expected at most {top.limits.steps:,} steps, got {len(top.step):,} "
                                 f"({_raise_it('steps')})")
    check.limits = top.limits


def _check_assignments(assignments: list[list[int]] | None, check: _Checker, index: int) -> None:
    """A step's `assignments` (replicas by partition): at least one partition, each with at
    least one and at most MAX_REPLICATION broker ids in range."""
    for i, replicas in enumerate(assignments or []):
        if not replicas:
            raise check.fail(f"assignments[{i}]", "expected at least one broker id", index)
        check.non_negative(len(replicas), f"assignments[{i}]", index, 1, MAX_REPLICATION)
        for b in replicas:
            check.non_negative(b, f"assignments[{i}]", index, 0, MAX_NODE_ID)
    if assignments is not None:
        check.non_negative(len(assignments), "assignments", index, 1, MAX_PARTITIONS)


def _check_totals(steps: list[Step], limits: Limits, check: _Checker) -> None:
    """Topics and partitions of all the create-topics steps together."""
    topics = partitions = 0
    for index, step in enumerate(steps, start=1):
        if isinstance(step, CreateTopics):
            topics += step.topic_count
            partitions += step.topic_count * step.partition_count
            if topics > limits.topics:
                raise check.fail("count" if step.names is None else "names", f"expected at most {limits.topics:,} topics created by the whole file, "
                                          f"got {topics:,} by this step ({_raise_it('topics')})", index)
        if isinstance(step, CreatePartitions):
            partitions += len(step.names) * step.count  # (at most: some of them exist already)
        if isinstance(step, (CreateTopics, CreatePartitions)) and partitions > limits.partitions:
            raise check.fail("partitions" if isinstance(step, CreateTopics) else "count",
                             f"expected at most {limits.partitions:,} partitions created by the "
                             f"whole file, got {partitions:,} by this step ({_raise_it('partitions')})", index)


def _check_config(config: dict[str, int | float], file: str) -> None:
    """`[config]` keys are SimConfig's fields, with its types."""
    if not config:
        return
    from kraftsim.sim import SimConfig  # the simulator loads only when a file configures it

    known = [f.encode_name for f in msgspec.structs.fields(SimConfig)]
    for key in config:
        if key not in known:
            raise ScenarioInvalid(file, f"config.{key}", f"unknown key; known keys here: {', '.join(known)}")
    _convert(config, SimConfig, file, prefix="config")


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file."""
    p = Path(path)
    try:
        text = tomlinput.read_text(p)
    except tomlinput.TomlTooComplex as e:
        raise ScenarioInvalid(str(p), None, str(e)) from None
    except UnicodeDecodeError as e:
        raise ScenarioInvalid(str(p), None, f"expected UTF-8 text (byte {e.start} is not)") from None
    except OSError as e:
        raise ScenarioInvalid(str(p), None, f"cannot be read: {e.strerror or e}") from None
    scenario = parse_scenario(text, str(p), p.parent)
    scenario.path = p
    return scenario


def _check_cluster(c: ClusterSpec, check: _Checker, base: Path) -> ClusterSpec:
    for key in ("controllers", "brokers", "combined"):  # bounded as `cluster create` bounds them, before any id is given
        if not isinstance(getattr(c, key), list):  # a list of voter ids goes with `from` (checked there)
            check.non_negative(getattr(c, key), f"cluster.{key}", maximum=MAX_NODES_PER_ROLE)
    if c.from_ is not None:
        if c.configs:
            raise check.fail("cluster.configs", "expected no node configs with `from` (the imported nodes keep "
                                                "the real cluster's)")
        return _check_from(c, check, base)
    try:
        validate_node_configs(c.configs)
    except KraftsimError as e:
        raise check.fail("cluster.configs", str(e)) from None
    if isinstance(c.controllers, list):
        raise check.fail("cluster.controllers", "expected an integer (a list of voter ids goes with `from` only)")
    if c.controllers is None and not c.combined:
        raise check.fail("cluster.controllers", "required key is missing (unless `combined` or `from` is given)")
    if (c.controllers or 0) + c.combined < 1:
        raise check.fail("cluster.controllers", "expected at least one controller (or combined node)")
    if c.release is None:
        raise check.fail("cluster.release", "required key is missing (the software every node runs, e.g. 3.7.2)")
    release = check.release(c.release, "cluster.release")
    if c.release_version is not None:
        check.mv(c.release_version, "cluster.release_version", release=release)
    for name in c.features:
        check.feature(name, f"cluster.features.{name}")
        check.non_negative(c.features[name], f"cluster.features.{name}")
    return msgspec.structs.replace(c, release=release, releases=_check_releases(c, check, initial_nodes(c)))


def _check_releases(c: ClusterSpec, check: _Checker, nodes: dict[int, tuple[str, ...]] | None) -> dict[str, str]:
    """`releases = { "4" = "3.9.1" }`: per-node releases, each resolved to the catalog's name;
    the node ids are checked here for a created cluster, at import for `from`."""
    out: dict[str, str] = {}
    for text, release in c.releases.items():
        key = f"cluster.releases.{text}"
        node = _node_key(text, key, check)
        if nodes is not None and node not in nodes:
            have = ", ".join(str(n) for n in sorted(nodes))
            raise check.fail(key, f"expected one of the cluster's nodes ({have}); node {node} does not exist")
        out[text] = check.release(release, key)
    return out


def _node_key(text: str, key: str, check: _Checker, step: int | None = None) -> int:
    """A table key naming a node: its id written as a number, as the ids elsewhere ("02" named
    node 2 in `cluster.releases`, where it could silently replace "2", and no node in
    `expect.releases`; "²" was an internal error)."""
    if not (text.isascii() and text.isdigit()) or str(int(text)) != text:
        raise check.fail(key, f"expected a node id as the key (e.g. releases = {{ \"4\" = \"3.9.1\" }}), got {text!r}",
                         step)
    return int(text)


def _check_from(c: ClusterSpec, check: _Checker, base: Path) -> ClusterSpec:
    """`from = "PATH"`: a real cluster's metadata (relative to the scenario file), imported as
    `kraftsim cluster import` imports it; `release` and `controllers` (voter ids) override."""
    source = (base / c.from_).resolve()  # type: ignore[operator]
    if not source.exists():
        raise check.fail("cluster.from", f"expected a real cluster's metadata; {c.from_} does not exist")
    for key in ("brokers", "combined"):
        if getattr(c, key):
            raise check.fail(f"cluster.{key}", "not with `from`: the nodes are the real cluster's")
    if c.release_version is not None or c.features:
        key = "cluster.release_version" if c.release_version is not None else "cluster.features"
        raise check.fail(key, "not with `from`: the finalized features are the real cluster's")
    if c.controllers is not None and (not isinstance(c.controllers, list) or not c.controllers
                                      or any(not isinstance(i, int) or i < 0 for i in c.controllers)):
        raise check.fail("cluster.controllers", "expected a list of voter ids with `from` (e.g. [1, 2, 3])")
    from kraftsim.sim import import_source_kind  # the simulator loads only for a file that imports a cluster

    try:  # what the import refuses by the source's names alone, refused here: `check` says what `run` would
        import_source_kind(source)
    except KraftsimError as e:
        raise check.fail("cluster.from", f"the cluster cannot be imported: {e}") from None
    release = check.release(c.release, "cluster.release") if c.release is not None else None
    return msgspec.structs.replace(c, from_=str(source), release=release, releases=_check_releases(c, check, None))


def _check_step(raw: object, index: int, check: _Checker) -> Step:
    if not isinstance(raw, dict):
        raise check.fail(None, "expected a table", index)
    op = raw.get("op")
    if op is None:
        raise check.fail("op", f"required key is missing; one of {', '.join(OPS)}", index)
    if not isinstance(op, str) or op not in OPS:
        raise check.fail("op", f"unknown op {op!r}; expected one of {', '.join(OPS)}", index)
    step = cast(Step, _convert(raw, OPS[op], check.file, step=index))  # OPS[op] is one of Step's members
    if step.expect_error is not None and not step.expect_error.strip():
        raise check.fail("expect_error", "expected a non-empty fragment of the error text", index)
    strict = step.expect_error is None  # names the Kafka tools check are checked here only when no error is expected
    if isinstance(step, CreateTopics):
        if step.names is not None and not step.names:
            raise check.fail("names", "expected at least one topic name", index)
        # `names` stands for the count when given: its length is what is bounded
        count_key = "count" if step.names is None else "names"
        per_step = " (the most one step creates, whatever [limits] says: split it across steps)"
        check.non_negative(step.topic_count, count_key, index, 1, MAX_TOPICS, per_step)
        check.non_negative(step.partitions, "partitions", index, 1, MAX_PARTITIONS, per_step)
        check.non_negative(step.replication_factor, "replication_factor", index, 1, MAX_REPLICATION)
        _check_assignments(step.assignments, check, index)
        check.non_negative(step.topic_count * step.partition_count, f"{count_key} x partitions", index, 1,
                           MAX_PARTITIONS, per_step)
    elif isinstance(step, CreatePartitions):
        if not step.names:
            raise check.fail("names", "expected at least one topic name", index)
        check.non_negative(len(step.names), "names", index, 1, MAX_TOPICS)
        check.non_negative(step.count, "count", index, 1, MAX_PARTITIONS)
        check.non_negative(len(step.names) * step.count, "names x count", index, 1, MAX_PARTITIONS)
        _check_assignments(step.assignments, check, index)
    elif isinstance(step, Roll):
        step = msgspec.structs.replace(step, release=check.release(step.release, "release", index))
        check.selector(step.nodes, "nodes", index)
    elif isinstance(step, AddNode):
        step = msgspec.structs.replace(step, release=check.release(step.release, "release", index))
        if check.nodes is not None:
            nid = step.id if step.id is not None else max(check.nodes, default=0) + 1
            check.non_negative(nid, "id", index, maximum=MAX_NODE_ID)
            if nid in check.nodes:
                raise check.fail("id", f"expected a new node id; node {nid} already exists", index)
            check.nodes[nid] = (step.role,)
    elif isinstance(step, AddController):
        check.non_negative(step.crash_leader_after_ms, "crash_leader_after_ms", index)
        if step.release is not None:
            step = msgspec.structs.replace(step, release=check.release(step.release, "release", index))
        if check.nodes is not None:
            nid = step.id if step.id is not None else max(check.nodes, default=0) + 1
            check.non_negative(nid, "id", index, maximum=MAX_NODE_ID)
            if nid in check.nodes and "controller" not in check.nodes[nid]:
                raise check.fail("id", f"expected a controller; node {nid} is a broker", index)
            check.nodes.setdefault(nid, ("controller",))
    elif isinstance(step, RemoveController):
        check.ids([step.id], "id", index)
    if isinstance(step, (FeaturesChange, FeaturesDisable)) and step.tool_release is not None:
        step = msgspec.structs.replace(step, tool_release=check.release(step.tool_release, "tool_release", index))
    if isinstance(step, FeaturesChange):
        given = [k for k in ("metadata", "release_version", "features") if getattr(step, k) is not None]
        if not given and strict:
            raise check.fail("metadata", "expected one of metadata, release_version or features", index)
        if strict:
            if step.metadata is not None:
                check.mv(step.metadata, "metadata", index)
            if step.release_version is not None:
                check.mv(step.release_version, "release_version", index)
            for name in step.features or {}:
                check.feature(name, f"features.{name}", index)
    elif isinstance(step, FeaturesDisable):
        if not step.features and strict:
            raise check.fail("features", "expected at least one feature name", index)
        if strict:
            for name in step.features:
                check.feature(name, "features", index)
    elif isinstance(step, (NodesStep, DiskFault)):
        check.selector(step.nodes, "nodes", index)
    elif isinstance(step, Start):
        check.selector(step.nodes, "nodes", index)
        if step.release is not None:
            step = msgspec.structs.replace(step, release=check.release(step.release, "release", index))
    elif isinstance(step, Partition):
        seen: set[int] = set()
        for g, group in enumerate(step.groups):
            check.ids(group, f"groups[{g}]", index)
            if seen & set(group):
                raise check.fail(f"groups[{g}]", f"node {min(seen & set(group))} is in two groups", index)
            seen |= set(group)
        if not step.groups:
            raise check.fail("groups", "expected at least one group of node ids", index)
    elif isinstance(step, Snapshot):
        check.selector(step.nodes, "nodes", index)
    elif isinstance(step, Run):
        check.duration(step.ms, "ms", index, 0)
    elif isinstance(step, Wait):
        check.duration(step.timeout_ms, "timeout_ms", index, 1)
    elif isinstance(step, (AlterTopicConfig, AlterBrokerConfig, AlterClientMetrics, AlterGroupConfig)):
        if not step.configs and not step.delete:
            raise check.fail("configs", "expected configs to set or delete", index)
        if isinstance(step, AlterBrokerConfig) and step.broker is not None and strict:
            check.ids([step.broker], "broker", index)
    elif isinstance(step, AlterClientQuotas):
        if not step.quotas and not step.delete:
            raise check.fail("quotas", "expected quotas to set or delete", index)
        named = {"user": step.user, "client-id": step.client_id, "ip": step.ip}
        both = [t for t in step.default if named[t] is not None]
        if both:
            raise check.fail("default", f"{both[0]!r} is both named and at its default", index)
        if not step.entity():
            raise check.fail("user", "expected an entity: user, client_id, ip or default", index)
    elif isinstance(step, AlterScramCredentials):
        if not step.credentials and not step.delete:
            raise check.fail("credentials", "expected credentials to set or delete", index)
        for mechanism in [*step.credentials, *step.delete]:
            if mechanism not in SCRAM_MECHANISMS:
                raise check.fail("credentials", f"unknown SCRAM mechanism {mechanism!r}; expected one of "
                                                f"{', '.join(SCRAM_MECHANISMS)}", index)
        for mechanism, secret in step.credentials.items():
            where = f"credentials.{mechanism}"
            salted = (secret.salt, secret.salted_password)
            by_password = secret.password is not None and salted == (None, None)
            by_salt = secret.password is None and None not in salted
            if not (by_password or by_salt):
                raise check.fail(where, "expected a password, or a salt and a salted_password", index)
            for key in ("salt", "salted_password"):
                value = getattr(secret, key)
                if value is not None:
                    try:
                        base64.b64decode(value, validate=True)
                    except binascii.Error:
                        raise check.fail(f"{where}.{key}", "expected base64", index) from None
    elif isinstance(step, ElectLeaders) and step.partitions is not None:
        if not step.partitions:
            raise check.fail("partitions", "expected at least one topic (leave the key out to elect every partition)",
                             index)
        for topic, ids in step.partitions.items():
            if not ids:
                raise check.fail(f"partitions.{topic}", "expected at least one partition id", index)
            check.non_negative(len(ids), f"partitions.{topic}", index, 1, MAX_PARTITIONS)
            for pid in ids:
                check.non_negative(pid, f"partitions.{topic}", index, 0, MAX_PARTITIONS)
    elif isinstance(step, ReassignPartitions):
        if not step.partitions:
            raise check.fail("partitions", "expected at least one { topic, partition, replicas } table", index)
        check.non_negative(len(step.partitions), "partitions", index, 1, MAX_PARTITIONS)
        planned: set[tuple[str, int]] = set()
        for i, p in enumerate(step.partitions):
            if not p.topic:
                raise check.fail(f"partitions[{i}].topic", "expected a topic name", index)
            check.non_negative(p.partition, f"partitions[{i}].partition", index, 0, MAX_PARTITIONS)
            if (p.topic, p.partition) in planned:  # (the tool's refusal of such a plan, in its words)
                raise check.fail(f"partitions[{i}]", "Partition reassignment contains duplicate topic partitions: "
                                                     f"{p.topic}-{p.partition}", index)
            planned.add((p.topic, p.partition))
            if p.replicas is not None:
                check.non_negative(len(p.replicas), f"partitions[{i}].replicas", index, 0, MAX_REPLICATION)
                for b in p.replicas:
                    check.non_negative(b, f"partitions[{i}].replicas", index, 0, MAX_NODE_ID)
    elif isinstance(step, (UnregisterController, UnregisterBroker)):
        check.non_negative(step.id, "id", index, maximum=MAX_NODE_ID)
    if step.expect is not None:
        _check_expect(step.expect, check, index)
    return step


def _check_expect(e: Expect, check: _Checker, step: int | None = None) -> None:
    if e.metadata_version is not None and mv_level(check.catalog, e.metadata_version) is None:
        check.mv(e.metadata_version, "expect.metadata_version", step)  # says what is known
    for name, level in (e.finalized or {}).items():
        check.feature(name, f"expect.finalized.{name}", step)
        check.non_negative(level, f"expect.finalized.{name}", step)
    for key in ("running", "failed", "stopped", "fenced"):
        ids = getattr(e, key)
        if ids is not None:
            check.ids(ids, f"expect.{key}", step)
    if e.leader is not None:
        check.ids([e.leader], "expect.leader", step)
    for text, release in (e.releases or {}).items():
        check.ids([_node_key(text, f"expect.releases.{text}", check, step)], f"expect.releases.{text}", step)
        check.release(release, f"expect.releases.{text}", step)
    check.non_negative(e.topics, "expect.topics", step)
