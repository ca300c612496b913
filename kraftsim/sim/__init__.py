"""kraftsim.sim: simulated Kafka nodes, the clusters they form, and what they tell clients.

Its face is `Simulation` (simulation.py, documented in docs/sim-api.md) and the value types
below; the rooms behind it:

  node/          one simulated node, whichever engine runs it: SimNode, formatting, state files,
                 ApiVersions and finalized features, voter sets
  engine/        the event engine under Simulation: scheduler and network, raft (elections,
                 fetching, reconfiguration), broker/controller lifecycle, invariants
  ticks/         the older tick engine (`cluster create --engine ticks`): SimCluster
  tools/         what the command line shows of a cluster directory, for either engine, and
                 kafka-leader-election's and kafka-reassign-partitions' requests and lines
  importing/     a simulated cluster from a real cluster's metadata

  simulation     Simulation: the public API over the event engine; where faults and ops enter
  types          SimConfig, SimError, NodeInfo, SimEvent, InvariantResult (the public values)
  saved          the event engine's cluster.json (format 2)
  admin          the admin-client requests Simulation answers (topics, features; the 4.3/4.4 ops
                 are Simulation methods)
  features_tool  kafka-features against a simulated cluster (either engine)
"""

from typing import TYPE_CHECKING

from kraftsim.lazy import exports

if TYPE_CHECKING:  # what the lazy exports below resolve to, for the type checker only
    from kraftsim.sim.engine.quorum_view import QuorumInfo, ReplicaInfo
    from kraftsim.sim.engine.reconfig import VoterChangeRefused
    from kraftsim.sim.features_tool import tool_note
    from kraftsim.sim.importing import import_cluster, import_source_kind
    from kraftsim.sim.node.api_versions import API_VERSIONS_KEY, api_version_table, api_versions_response
    from kraftsim.sim.node.format import elapsed_text
    from kraftsim.sim.saved import STATE_FILE
    from kraftsim.sim.tools.leader_election import ElectionOutput, elected_partitions, leader_election
    from kraftsim.sim.tools.reassign_partitions import ReassignOutput, reassign_partitions
    from kraftsim.sim.tools.reassign_partitions import Target as ReassignTarget
    from kraftsim.sim.simulation import Simulation
    from kraftsim.sim.types import BROKER, CONTROLLER, INVARIANTS, InvariantResult, NodeInfo, RollStopped, SimConfig
    from kraftsim.sim.types import SimError, SimEvent, TopicsRefused, created_roles

# Loaded on first use: `import kraftsim.sim.node.api_versions` (or any room) must not start
# the whole simulator, and `kraftsim serve` imports only what its first answer needs.
_MODULE_OF = {
    **{name: ("kraftsim.sim.types", name)
       for name in ("BROKER", "CONTROLLER", "INVARIANTS", "InvariantResult", "NodeInfo", "RollStopped", "SimConfig",
                    "SimError", "SimEvent", "TopicsRefused", "created_roles")},
    "QuorumInfo": ("kraftsim.sim.engine.quorum_view", "QuorumInfo"),
    "ReplicaInfo": ("kraftsim.sim.engine.quorum_view", "ReplicaInfo"),
    "VoterChangeRefused": ("kraftsim.sim.engine.reconfig", "VoterChangeRefused"),
    "Simulation": ("kraftsim.sim.simulation", "Simulation"),
    # what the scenario runner, the serve command and its handlers use of the rooms
    **{name: ("kraftsim.sim.node.api_versions", name)
       for name in ("API_VERSIONS_KEY", "api_version_table", "api_versions_response")},
    "STATE_FILE": ("kraftsim.sim.saved", "STATE_FILE"),
    "elapsed_text": ("kraftsim.sim.node.format", "elapsed_text"),
    "import_cluster": ("kraftsim.sim.importing", "import_cluster"),
    "import_source_kind": ("kraftsim.sim.importing", "import_source_kind"),
    "tool_note": ("kraftsim.sim.features_tool", "tool_note"),
    **{name: ("kraftsim.sim.tools.leader_election", name)
       for name in ("ElectionOutput", "elected_partitions", "leader_election")},
    "ReassignOutput": ("kraftsim.sim.tools.reassign_partitions", "ReassignOutput"),
    "ReassignTarget": ("kraftsim.sim.tools.reassign_partitions", "Target"),
    "reassign_partitions": ("kraftsim.sim.tools.reassign_partitions", "reassign_partitions"),
}
__all__ = [
    "API_VERSIONS_KEY", "INVARIANTS", "InvariantResult", "NodeInfo", "QuorumInfo", "ReplicaInfo", "RollStopped",
    "STATE_FILE", "SimConfig", "SimError", "SimEvent", "Simulation", "TopicsRefused", "VoterChangeRefused",
    "api_version_table", "api_versions_response", "elapsed_text", "import_cluster", "import_source_kind", "tool_note",
    "ElectionOutput", "elected_partitions", "leader_election", "ReassignOutput", "ReassignTarget",
    "reassign_partitions", "BROKER", "CONTROLLER", "created_roles",
]
__getattr__ = exports(__name__, _MODULE_OF)
