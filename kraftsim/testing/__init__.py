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

from typing import TYPE_CHECKING

from kraftsim.lazy import exports

_MODULE_OF = {
    "ClusterStateMachine": ("kraftsim.testing.machine", "ClusterStateMachine"),
    "PropertyFailed": ("kraftsim.testing.machine", "PropertyFailed"),
    "ClusterHandle": ("kraftsim.testing.handle", "ClusterHandle"),
    # a run as steps, shared with `kraftsim serve`'s recording
    **{name: ("kraftsim.testing.steps", name) for name in ("OP_KEYS", "ClusterShape", "Step", "scenario_text")},
}
__all__ = sorted(_MODULE_OF)
if TYPE_CHECKING:  # the same names as mypy sees them (`as` marks a re-export); at run time each loads on first use
    from kraftsim.testing.handle import ClusterHandle as ClusterHandle
    from kraftsim.testing.machine import ClusterStateMachine as ClusterStateMachine, PropertyFailed as PropertyFailed
    from kraftsim.testing.steps import (
        OP_KEYS as OP_KEYS, ClusterShape as ClusterShape, Step as Step, scenario_text as scenario_text,
    )

__getattr__ = exports(__name__, _MODULE_OF)
