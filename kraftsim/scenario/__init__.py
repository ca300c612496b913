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

from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.validate import Scenario, load_scenario, parse_scenario

__all__ = ["Scenario", "ScenarioInvalid", "load_scenario", "parse_scenario"]
