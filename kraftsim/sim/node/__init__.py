"""kraftsim.sim.node: one simulated Kafka node, whichever engine runs it.

  simnode        SimNode: its release, its formatted directory and log replica, its loader
  format         `kafka-storage format` of a node, seeded ids, the virtual clock's start
  state_files    quorum-state and leader-epoch-checkpoint, rewritten only when changed
  start_scan     what a controller's start-up finds finalized on its disk
  voters         KIP-853: the kraft.version and voter set a node's replica holds
  api_versions, finalized, client_view   what a node tells clients (KIP-35, KIP-584)
  registration_profile, cordoned         what a broker registers and heartbeats with
  commit_share   committed batches replayed once for the whole cluster, not once per node
  controller_commits   the active controller's replay of a batch, kept for its software's loaders
  data/          the ApiVersions table by release
"""
