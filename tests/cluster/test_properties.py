"""Properties of any sequence of operator actions on a simulated cluster (a hypothesis state machine).

The rules are what an operator does: roll a node to another release, or upgrade,
downgrade or disable a feature (refused or not). After each command:

- every running node's replica is the active controller's log, byte for byte;
- every registered broker, fenced or not, supports every finalized level (Kafka checks
  each one before it finalizes a level, and refuses a registration that does not);
- the nodes agree: `load_path` gives the same image wherever the replicas end at the
  same offset, and that image is the active controller's;
- reopening the directory gives the same state (what a command saved is all there is),
  and the reopened cluster has the properties above.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kraftsim.controller.features import FeatureUpdate, UpgradeType
from kraftsim.image import image_digest, load_path
from kraftsim.sim.ticks.cluster import SimCluster
from kraftsim.sim.node.simnode import node_directory

RELEASES = ("3.9", "4.0", "4.1")
FEATURES = ("metadata.version", "group.version", "transaction.version")
NODES = (1, 2, 3)
LOG = "00000000000000000000.log"

# What a command leaves behind that reopening must give back: leader, epoch, node releases.
SavedState = tuple[int | None, int, list[str]]


def _quiet(line: str) -> None:
    """The clusters' output is not looked at here."""


def saved_state(cluster: SimCluster) -> SavedState:
    return cluster.state.leader, cluster.state.epoch, [n.release for n in cluster.state.nodes]


def replicas_are_the_leaders_log(cluster: SimCluster) -> None:
    leader = cluster.leader_node()
    if leader is None:
        return
    leader.log.flush()
    raw = (leader.metadata_dir / LOG).read_bytes()
    for node in cluster.running_nodes():
        assert (node.metadata_dir / LOG).read_bytes() == raw, f"node {node.id}'s log differs from the leader's"


def brokers_support_finalized_levels(cluster: SimCluster) -> None:
    if cluster.leader_node() is None:
        return
    image = cluster.image()
    levels = {k: v for k, v in image.features.all_levels().items() if v}
    for broker in image.cluster.sorted_brokers():
        ranges = {f.name: (f.min_version, f.max_version) for f in broker.supported_features}
        for name, level in levels.items():
            lo, hi = ranges.get(name, (0, 0))
            assert lo <= level <= hi, (broker.id, name, level, ranges)


def nodes_agree(cluster: SimCluster) -> None:
    leader = cluster.leader_node()
    by_end: dict[int, set[str]] = {}
    for state in cluster.state.nodes:
        loaded = load_path(node_directory(cluster.directory, state.id))
        by_end.setdefault(loaded.end_offset, set()).add(image_digest(loaded.image))
        if leader is not None and state.running and not cluster.nodes[state.id].blocked:
            assert loaded.image.same_content(cluster.image()), f"node {state.id}'s image is not the leader's"
    assert all(len(digests) == 1 for digests in by_end.values()), by_end


def consistent(cluster: SimCluster) -> None:
    replicas_are_the_leaders_log(cluster)
    brokers_support_finalized_levels(cluster)
    nodes_agree(cluster)


class OperatorActions(RuleBasedStateMachine):
    """One cluster directory; each rule opens it, runs one command, checks and closes it."""

    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory()
        self.directory = Path(self._tmp.name) / "c"
        self.saved: SavedState | None = None

    @initialize()
    def create(self) -> None:
        SimCluster.create(self.directory, controllers=1, brokers=2, release="4.0", release_version="3.9-IV0",
                          emit=_quiet).close()

    def _command(self, run: Callable[[SimCluster], object]) -> None:
        with SimCluster.open(self.directory, emit=_quiet) as cluster:
            run(cluster)
            consistent(cluster)
            self.saved = saved_state(cluster)

    @rule(node=st.sampled_from(NODES), release=st.sampled_from(RELEASES))
    def roll(self, node: int, release: str) -> None:
        self._command(lambda cluster: cluster.roll(release, [node]))

    @rule(feature=st.sampled_from(FEATURES), level=st.integers(0, 27),
          kind=st.sampled_from((UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE)))
    def update_feature(self, feature: str, level: int, kind: UpgradeType) -> None:
        update = {feature: FeatureUpdate(feature, level, int(kind))}
        self._command(lambda cluster: cluster.update_features(update, False))

    @precondition(lambda self: self.saved is not None)
    @invariant()
    def reopening_gives_the_saved_state(self) -> None:
        reopened = SimCluster.open(self.directory, emit=_quiet, passive=True)
        try:
            assert saved_state(reopened) == self.saved
            consistent(reopened)
        finally:
            reopened.close()

    def teardown(self) -> None:
        self._tmp.cleanup()


OperatorActions.TestCase.settings = settings(max_examples=8, stateful_step_count=4, deadline=None,
                                             suppress_health_check=[HealthCheck.too_slow])
TestAnySequenceOfOperationsKeepsTheClusterConsistent = OperatorActions.TestCase
