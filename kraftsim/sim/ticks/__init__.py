"""kraftsim.sim.ticks: the older tick engine (`cluster create --engine ticks`), in which every
node sees the leader's log at once. Kept for clusters made with it and `--engine ticks`.

  cluster        SimCluster: creating, opening, rolling and adding nodes; the ticks
  lifecycle      registrations and heartbeats per tick
  state          its cluster.json (format 1)
  status         what `cluster status` shows of a tick-engine cluster
"""
