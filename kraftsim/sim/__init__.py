"""kraftsim.sim: simulated Kafka nodes, the clusters they form, and what they tell clients.

  types          SimConfig, SimError, NodeInfo, SimEvent, InvariantResult (the public values)
  simulation     Simulation: the simulator's public API (SIM_API.md)
  engine, raft, lifecycle, member, events   the event-driven engine under it
  reconfig, voters, quorum_view   quorum membership (KIP-853): voter sets, voter changes, DescribeQuorum
  invariants     the invariants it checks; admin: its admin-client requests; saved: cluster.json
  narrate, directory   the CLI's lines and both simulators' directories (and the event one's status)
  node_format    seeded ids and `kafka-storage format` of a node, for both simulators
  api_versions   ApiVersions answers by release and role (KIP-35, KIP-584, KIP-1022)
  finalized      the finalized features a node exposes
  client_view    the client-side view over many nodes (range intersection, highest epoch)
  node           one node: its release, its formatted directory and log replica, its loader
  cluster        SimCluster: the tick simulator (`--engine ticks`); ticks_state, ticks_lifecycle its parts
  features_tool  kafka-features against a simulated cluster
  status         what `kraftsim cluster status` shows of a tick-simulator cluster
"""

from kraftsim.sim.types import INVARIANTS, InvariantResult, NodeInfo, SimConfig, SimError, SimEvent
from kraftsim.sim.quorum_view import QuorumInfo, ReplicaInfo
from kraftsim.sim.reconfig import VoterChangeRefused
from kraftsim.sim.simulation import Simulation

__all__ = ["INVARIANTS", "InvariantResult", "NodeInfo", "QuorumInfo", "ReplicaInfo", "SimConfig", "SimError",
           "SimEvent", "Simulation", "VoterChangeRefused"]
