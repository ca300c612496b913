"""Scenario sweeps: every scenario under every seed, with seeded fault schedules.

  faults   the --faults SPEC, the schedule a seed draws, injected as scenario steps; TOML out
  runs     the input rows (one per run) and the row function: one `scenario_sweep` row per run
  tasks    each run's estimated cost, and the guided bins of runs that are Spark's tasks
           where they cannot take runs from a work queue (masters other than local)
  engine   in this process or on Spark (a work queue on local masters, else fan_out's bins),
           the table, reproducer files, progress
  driver_share
           the runs the driver makes itself while Spark starts and its first task starts
  summary  pass rates with Wilson intervals, common failures, slowest runs; the plots
  report   the sweep's and snapshot-cost's inline-SVG sections of a scenario's HTML report
"""

from kraftsim.pipeline.sweep.faults import FaultSpec, inject, parse_faults
from kraftsim.pipeline.sweep.runs import SCHEMA, parse_seeds, sweep_inputs, sweep_row

__all__ = ["SCHEMA", "FaultSpec", "inject", "parse_faults", "parse_seeds", "sweep_inputs", "sweep_row"]
