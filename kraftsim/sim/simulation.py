"""Simulation: the simulator's public face (SIM_API.md), over SimCluster.

Every operation a scenario, a state machine or the CLI needs is here, with Kafka's texts
as errors (SimError). This version runs on SimCluster's ticks; fault operations that
need the event-driven engine raise SimError until it is in place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Callable, Mapping, Sequence

from kraftsim.controller.replication import (
    CreatableTopic, CreateTopicsRequest, DeleteTopicsRequest, DeleteTopicState, create_topics, delete_topics,
)
from kraftsim.controller.features import KIP_778
from kraftsim.errors import KraftsimError
from kraftsim.image import MetadataImage
from kraftsim.sim import features_tool
from kraftsim.sim.cluster import TICK_MS, MvChangeReport, SimCluster
from kraftsim.sim.node import BROKER, CONTROLLER
from kraftsim.sim.types import (
    INVARIANTS, RUNNING, STOPPED, InvariantResult, NodeInfo, SimConfig, SimError, SimEvent,
)
from kraftsim.storage import METADATA_DIR_NAME
from kraftsim.versions import FEATURE_NAME as MV_NAME, Catalog, ToolFailure

POLICIES = ("kafka", KIP_778)


def _policies(policy: str) -> tuple[str, ...]:
    if policy not in POLICIES:
        raise SimError(f"unknown policy {policy!r}; known policies: {', '.join(POLICIES)}")
    return () if policy == "kafka" else (policy,)


class Simulation:
    """A simulated KRaft cluster in a directory (see SIM_API.md). Use `create` or `open`."""

    def __init__(self, cluster: SimCluster, config: SimConfig):
        self._cluster = cluster
        self.config = config
        self._subscribers: list[Callable[[SimEvent], None]] = []
        self._closed = False
        self._mv_reports: list[MvChangeReport] = []

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, directory: Path | str, *, controllers: int, brokers: int = 0, combined: int = 0,
               release: str, release_version: str | None = None, features: Mapping[str, int] | None = None,
               seed: int = 0, policy: str = "kafka", catalog: Catalog | str | None = None,
               config: SimConfig | None = None) -> "Simulation":
        if combined:
            raise SimError("combined broker+controller nodes are not simulated yet")
        sim = cls.__new__(cls)
        sim.config, sim._subscribers, sim._closed, sim._mv_reports = config or SimConfig(), [], False, []
        feats = [f"{k}={v}" for k, v in sorted((features or {}).items())]
        cat_path = catalog if isinstance(catalog, str) else None
        try:
            sim._cluster = SimCluster.create(directory, controllers=controllers, brokers=brokers, release=release,
                                             release_version=release_version, features=feats, seed=seed,
                                             policies=_policies(policy), catalog=cat_path, emit=sim._note)
        except ToolFailure as e:
            raise SimError(str(e)) from None
        return sim

    @classmethod
    def open(cls, directory: Path | str, config: SimConfig | None = None) -> "Simulation":
        sim = cls.__new__(cls)
        sim.config, sim._subscribers, sim._closed, sim._mv_reports = config or SimConfig(), [], False, []
        sim._cluster = SimCluster.open(directory, emit=sim._note)
        return sim

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._cluster.save()
        finally:
            self._cluster.close()

    def __enter__(self) -> "Simulation":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the timeline

    def _note(self, line: str) -> None:
        self._publish(SimEvent(self._now(), None, "note", {"text": line}))

    def _now(self) -> int:
        cluster = getattr(self, "_cluster", None)
        return 0 if cluster is None else cluster.state.now_ms

    def _publish(self, event: SimEvent) -> None:
        for callback in self._subscribers:
            callback(event)

    def subscribe(self, callback: Callable[[SimEvent], None]) -> None:
        self._subscribers.append(callback)

    def timeline_jsonl(self, path: Path | str | IO[str]) -> None:
        """Stream every event from now on to `path` as JSON lines (one object per event)."""
        out = open(path, "a", encoding="utf-8") if isinstance(path, (str, Path)) else path

        def write(event: SimEvent) -> None:
            out.write(json.dumps(event.to_json(), sort_keys=True) + "\n")

        self.subscribe(write)

    # ------------------------------------------------------------------ views

    @property
    def seed(self) -> int:
        return self._cluster.state.seed

    @property
    def now_ms(self) -> int:
        return self._cluster.state.now_ms

    @property
    def catalog(self) -> Catalog:
        return self._cluster.catalog

    def nodes(self) -> list[NodeInfo]:
        out = []
        leader_image = self._cluster.image()
        for ns in sorted(self._cluster.state.nodes, key=lambda n: n.id):
            fenced = None
            if ns.is_broker and leader_image is not None:
                reg = leader_image.cluster.broker(ns.id)
                fenced = True if reg is None or str(reg.incarnation_id) != ns.incarnation else reg.fenced
            out.append(NodeInfo(ns.id, tuple(ns.roles), ns.release, RUNNING if ns.running else STOPPED, fenced,
                                ns.note))
        return out

    def leader(self) -> int | None:
        return self._cluster.state.leader

    def finalized(self) -> dict[str, int]:
        node = self._cluster.leader_node()
        fin = node.finalized() if node is not None else None
        return {} if fin is None else fin.as_dict()

    def metadata_version(self) -> int:
        return self.finalized().get(MV_NAME, 0)

    def image(self, node_id: int) -> MetadataImage | None:
        node = self._cluster.node(node_id)
        return node.image if node.state.running else None

    def log_dir(self, node_id: int) -> Path:
        self._cluster.state.node(node_id)
        return self._cluster.node(node_id).directory / METADATA_DIR_NAME

    def mv_changes(self) -> list:
        return list(self._mv_reports)


    # ------------------------------------------------------------------ operations

    def _ids(self, nodes: str | int | Sequence[int]) -> list[int]:
        all_ids = [n.id for n in self._cluster.state.nodes]
        if isinstance(nodes, int):
            nodes = [nodes]
        if nodes == "all":
            return all_ids
        if nodes == "controllers":
            return [n.id for n in self._cluster.state.nodes if n.is_controller]
        if nodes == "brokers":
            return [n.id for n in self._cluster.state.nodes if n.is_broker]
        if isinstance(nodes, str):
            raise SimError(f"nodes: expected \"all\", \"controllers\", \"brokers\" or a list of ids, got {nodes!r}")
        for i in nodes:
            if i not in all_ids:
                raise SimError(f"the cluster has no node {i}")
        return sorted(nodes)

    def _execute(self, rule):  # type: ignore[no-untyped-def]
        result = self._cluster.execute(rule)
        if result is None:
            raise SimError("no active controller")
        if not result.ok:
            raise SimError(result.error.message or result.error.name)
        return result

    def create_topics(self, count: int, partitions: int, replication_factor: int | None = None,
                      prefix: str = "topic-") -> list[str]:
        brokers = [n for n in self._cluster.state.nodes if n.is_broker]
        rf = replication_factor if replication_factor is not None else min(3, len(brokers))
        image = self._cluster.image()
        if image is None:
            raise SimError("no active controller")
        names: list[str] = []
        i = 0
        while len(names) < count:
            name = f"{prefix}{i}"
            if image.topics.get_topic_by_name(name) is None:
                names.append(name)
            i += 1
        request = CreateTopicsRequest(tuple(CreatableTopic(n, partitions, rf) for n in names),
                                      seed=self.seed * 1_000_003 + len(image.topics))
        result = self._execute(lambda ctx: create_topics(ctx, request))
        errors = [t for t in result.response.topics if t.error_code != 0]
        if errors:
            raise SimError(errors[0].error_message or f"CreateTopics failed for {errors[0].name}")
        self._cluster.settle(min_ticks=1)
        return names

    def delete_topics(self, names: Sequence[str]) -> None:
        request = DeleteTopicsRequest(tuple(DeleteTopicState(name=n) for n in names))
        result = self._execute(lambda ctx: delete_topics(ctx, request))
        errors = [t for t in result.response.responses if t.error_code != 0]
        if errors:
            raise SimError(errors[0].error_message or f"DeleteTopics failed for {errors[0].name}")
        self._cluster.settle(min_ticks=1)

    def roll(self, release: str, nodes: str | Sequence[int] = "all") -> None:
        try:
            problems = self._cluster.roll(release, None if nodes == "all" else self._ids(nodes))
        except KraftsimError as e:
            raise SimError(str(e)) from None
        if problems:
            raise SimError(problems[0])

    def add_node(self, role: str, release: str, node_id: int | None = None) -> int:
        if role not in (BROKER, CONTROLLER):
            raise SimError(f"unknown role {role!r}: expected \"broker\" or \"controller\"")
        before = {n.id for n in self._cluster.state.nodes}
        try:
            problem = self._cluster.add(role, release, node_id)
        except KraftsimError as e:
            raise SimError(str(e)) from None
        new = sorted({n.id for n in self._cluster.state.nodes} - before)[0]
        if problem:
            raise SimError(problem)
        return new

    def features(self, action: str, *, metadata: str | None = None, release_version: str | None = None,
                 features: Mapping[str, int] | Sequence[str] | None = None, unsafe: bool = False,
                 dry_run: bool = False) -> list[str]:
        if isinstance(features, Mapping):
            feats = [f"{k}={v}" for k, v in sorted(features.items())]
        else:
            feats = list(features or [])
        lines: list[str] = []
        leader = self._cluster.leader_node()
        tool = self.catalog.at_release(leader.state.release if leader is not None else
                                       self._cluster.state.nodes[0].release)
        original = self._cluster.update_features

        def capture(updates, validate_only):  # type: ignore[no-untyped-def]
            response, reports = original(updates, validate_only)
            self._mv_reports.extend(reports)
            return response, reports

        self._cluster.update_features = capture  # type: ignore[method-assign]
        try:
            features_tool.update(self._cluster, tool, action, metadata=metadata, release_version=release_version,
                                 features=feats, unsafe=unsafe, dry_run=dry_run, out=lines.append)
        except ToolFailure as e:
            raise SimError("\n".join(lines + [str(e)])) from None
        finally:
            del self._cluster.update_features
        return lines

    def _unsupported(self, what: str) -> SimError:
        return SimError(f"{what} is not simulated yet")

    def crash(self, nodes: str | int | Sequence[int]) -> None:
        raise self._unsupported("crash")

    def stop(self, nodes: str | int | Sequence[int]) -> None:
        for i in self._ids(nodes):
            node = self._cluster.node(i)
            if node.state.running:
                self._cluster._stop(node, None, clean=True)

    def start(self, nodes: str | int | Sequence[int], release: str | None = None) -> None:
        for i in self._ids(nodes):
            state = self._cluster.state.node(i)
            if not state.running:
                problem = self._cluster.start(i, release or state.release)
                if problem and not self._cluster.state.node(i).running:
                    raise SimError(problem)

    def partition(self, groups: Sequence[Sequence[int]]) -> None:
        raise self._unsupported("partition")

    def heal(self) -> None:
        raise self._unsupported("heal")

    def disk_fault(self, nodes: str | int | Sequence[int], kind: str) -> None:
        raise self._unsupported("disk-fault")

    def snapshot(self, nodes: Sequence[int] | None = None) -> list[Path]:
        raise self._unsupported("snapshot")

    def run(self, ms: int) -> None:
        for _ in range(max(0, ms) // TICK_MS):
            self._cluster.tick()

    def wait(self, timeout_ms: int) -> None:
        ticks = max(1, timeout_ms // TICK_MS)
        self._cluster.settle(max_ticks=ticks, min_ticks=1)
        if not self._cluster._settled() or self._cluster.state.leader is None:
            raise SimError(f"not stable after {timeout_ms} ms")

    def invariants(self) -> list[InvariantResult]:
        return [InvariantResult(name, True, None) for name in INVARIANTS]
