"""kraftsim.sim.engine: the event engine under `Simulation` (the default simulator).

  core           Engine: nodes, the event loop, faults, the active controller
  events         the seeded scheduler on virtual milliseconds and the simulated network
  member         one node's raft state in the engine (role, epoch, vote, high watermark), with a
                 state object per role: LeaderState, ElectionState, FollowerState
  raft           Raft: elections, votes, leadership, the commit (KRaft), a part the Engine owns
  fetching       Fetcher: replication by fetch, a part the Engine owns
  lifecycle      Lifecycle: brokers and controllers registering and heartbeating, a part the Engine owns
  isr            IsrExpansion: partition leaders adding followers back to their ISRs (AlterPartition),
                 a part the Engine owns
  balance        LeaderBalance: the active controller moving leaderships back to preferred replicas
                 (auto.leader.rebalance.enable), a part the Engine owns
  unclean        UncleanElection: the active controller electing leaders uncleanly by itself for
                 topics that allow it (3.9+), a part the Engine owns
  written        Written: one write of the active controller as isr and balance read it (what it
                 changed, from the controller's replica index)
  controller_task  ControllerTask: a write the active controller schedules for itself (balance's
                 and unclean's), and when it runs again
  reconfig       Reconfig: quorum reconfiguration (KIP-853), voters added and removed through the
                 leader, a part the Engine owns
  quorum_view    what DescribeQuorum answers
  invariants     the invariants checked after every event
"""
