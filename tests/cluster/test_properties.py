"""Properties of any sequence of operator actions on a simulated cluster (hypothesis).

Whatever an operator does (roll nodes to other releases, upgrade, downgrade or disable
features; refused or not), each command leaves the cluster such that:

- every running node's replica is the active controller's log, byte for byte;
- every registered broker, fenced or not, supports every finalized level (Kafka checks
  each one before it finalizes a level, and refuses a registration that does not);
- the nodes agree: `load_path` gives the same image wherever the replicas end at the
  same offset, and that image is the active controller's;
- reopening the directory gives the same state (what a command saved is all there is).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from kraftsim.controller.features import FeatureUpdate, UpgradeType
from kraftsim.image import image_digest
from kraftsim.image import load_path
from kraftsim.sim.cluster import SimCluster
from kraftsim.sim.node import node_directory

RELEASES = ("3.9", "4.0", "4.1")
FEATURES = ("metadata.version", "group.version", "transaction.version")

roll = st.tuples(st.just("roll"), st.sampled_from((1, 2, 3)), st.sampled_from(RELEASES))
update = st.tuples(st.just("update"), st.sampled_from(FEATURES), st.integers(0, 27),
                   st.sampled_from((UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE)))
actions = st.lists(st.one_of(roll, update), min_size=1, max_size=4)


def act(cluster: SimCluster, action: tuple) -> None:
    if action[0] == "roll":
        _, node, release = action
        cluster.roll(release, [node])
    else:
        _, feature, level, kind = action
        cluster.update_features({feature: FeatureUpdate(feature, level, int(kind))}, False)


def check(cluster: SimCluster) -> None:
    leader = cluster.leader_node()
    if leader is not None:
        leader.log.flush()
        image = cluster.image()
        levels = {k: v for k, v in image.features.all_levels().items() if v}
        for broker in image.cluster.sorted_brokers():
            ranges = {f.name: (f.min_version, f.max_version) for f in broker.supported_features}
            for name, level in levels.items():
                lo, hi = ranges.get(name, (0, 0))
                assert lo <= level <= hi, (broker.id, name, level, ranges)
        raw = (leader.metadata_dir / "00000000000000000000.log").read_bytes()
        for node in cluster.running_nodes():
            assert (node.metadata_dir / "00000000000000000000.log").read_bytes() == raw, node.id
    by_end: dict[int, set[str]] = {}
    for state in cluster.state.nodes:
        loaded = load_path(node_directory(cluster.directory, state.id))
        by_end.setdefault(loaded.end_offset, set()).add(image_digest(loaded.image))
        if leader is not None and state.running and not cluster.nodes[state.id].blocked:
            assert loaded.image.same_content(cluster.image()), state.id
    assert all(len(d) == 1 for d in by_end.values())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=actions)
def test_any_sequence_of_operations_keeps_the_cluster_consistent(actions: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "c"
        SimCluster.create(d, controllers=1, brokers=2, release="4.0", release_version="3.9-IV0",
                          emit=lambda line: None).close()
        for action in actions:
            with SimCluster.open(d, emit=lambda line: None) as cluster:
                act(cluster, action)
                check(cluster)
                saved = (cluster.state.leader, cluster.state.epoch, [n.release for n in cluster.state.nodes])
            reopened = SimCluster.open(d, emit=lambda line: None, passive=True)
            try:
                assert (reopened.state.leader, reopened.state.epoch,
                        [n.release for n in reopened.state.nodes]) == saved
                check(reopened)
            finally:
                reopened.close()
