"""kraftsim.sim: simulated Kafka nodes and what they tell each other and their clients.

For now it holds what a node advertises (`api_versions`: KIP-35/KIP-584/KIP-1022
ApiVersions answers), the finalized features a node exposes (`finalized`) and the
client-side view over many nodes (`client_view`). The event loop, clock, network and
node models will join them here.
"""
