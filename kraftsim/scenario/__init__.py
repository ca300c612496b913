"""kraftsim.scenario: what-if scenarios (contract 4), their runner and results (contract 5).

  language     the scenario file's keys as msgspec structs
  ops          every op as a typed value (a msgspec tagged union)
  apply        one op carried out on a Simulation (the runner, the state machine, the sweeps)
  validate     a file into checked structs, or one clear error (ScenarioInvalid)
  header       the comment block: question, source, answer
  runner       runs a scenario on the simulator's public API (kraftsim.sim.Simulation)
  expectations `[expect]` held against the final state
  losses       loss reports before downgrades and the changes carried out under kip-778
  results      the contract-5 result and the final-state digest
  text         the human-readable account of a run
  timeline     node lanes, marks and spans (partitions, crashes, fencing, no leader, drops) gathered while a scenario runs
  timeline_svg the timeline drawn as inline SVG
  html_report  one self-contained HTML page with the timeline, steps, losses, final state
  suite        the shipped scenarios (scenarios/) and the `scenario new` template
"""

from typing import TYPE_CHECKING

from kraftsim.lazy import exports
from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.language import Limits, RecordedFailure
from kraftsim.scenario.ops import Crash, DiskFault, Heal, Partition, Run, Start, StepBase, Stop, make, to_table
from kraftsim.scenario.recorded_failure import TABLE, check_name, plain
from kraftsim.scenario.results import ScenarioResult, result_json
from kraftsim.scenario.validate import Scenario, load_scenario, parse_scenario

if TYPE_CHECKING:  # the lazy names below as mypy sees them (`as` marks a re-export)
    from kraftsim.scenario.apply import apply as apply_op
    from kraftsim.scenario.markup import escape as escape
    from kraftsim.scenario.runner import SETUP_TIMEOUT_MS as SETUP_TIMEOUT_MS, run_scenario as run_scenario

# The runner and what carries out ops load the simulator: they load on first use. `apply_op` is
# scenario.apply's `apply`, named apart from the module, which importing it binds on the package.
_MODULE_OF = {
    "apply_op": ("kraftsim.scenario.apply", "apply"),
    "escape": ("kraftsim.scenario.markup", "escape"),
    "SETUP_TIMEOUT_MS": ("kraftsim.scenario.runner", "SETUP_TIMEOUT_MS"),
    "run_scenario": ("kraftsim.scenario.runner", "run_scenario"),
}
__getattr__ = exports(__name__, _MODULE_OF)

__all__ = [
    "Crash", "DiskFault", "Heal", "Limits", "Partition", "RecordedFailure", "Run", "SETUP_TIMEOUT_MS", "Scenario",
    "ScenarioInvalid", "ScenarioResult", "Start", "StepBase", "Stop", "TABLE", "apply_op", "check_name", "escape",
    "load_scenario", "make", "parse_scenario", "plain", "result_json", "run_scenario", "to_table",
]
