"""kraftsim.testing: property-based upgrade/downgrade testing for kraftsim's users.

  ClusterStateMachine  a hypothesis RuleBasedStateMachine over a simulated cluster
                       (contract 6): rules are scenario ops, invariants are the
                       simulator's plus model-level ones; a failure becomes a scenario file
  ClusterHandle        `self.cluster` in a machine: finalized levels, nodes, leader, images
  strategies           hypothesis strategies: records and batches, releases,
                       metadata.versions, feature levels, clusters, op sequences, fault
                       schedules, hypothetical catalogs
  catalogs             hypothetical catalogs as data, written as catalog TOML files
  plugin               the pytest plugin (entry point `kraftsim`): fixtures and options

The names that need hypothesis (ClusterStateMachine, strategies) are imported on first
use, so importing `kraftsim.testing` itself never requires it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ClusterHandle", "ClusterStateMachine", "PropertyFailed"]


def __getattr__(name: str) -> Any:
    if name in ("ClusterStateMachine", "PropertyFailed"):
        from kraftsim.testing import machine
        return getattr(machine, name)
    if name == "ClusterHandle":
        from kraftsim.testing.handle import ClusterHandle
        return ClusterHandle
    raise AttributeError(f"module 'kraftsim.testing' has no attribute {name!r}")
