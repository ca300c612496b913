"""kraftsim.sim.importing: a simulated cluster that starts from a real cluster's metadata.

  sources   reading and checking what the operator hands over (read-only)
  plan      nodes, roles, voters and releases from the metadata; overrides
  build     writing the Simulation directory whose nodes start where the source ends
  summary   what was imported, inferred and given, as text and JSON

    from kraftsim.sim.importing import import_cluster
    result = import_cluster(["real/kafka1"], "whatif/", release_overrides={3: "3.9"})
    sim = Simulation.open("whatif/")
"""

from kraftsim.sim.importing.run import (
    ImportResult,
    import_cluster,
    parse_release_overrides,
)
from kraftsim.sim.importing.sources import ImportRefused, import_source_kind

__all__ = ["ImportRefused", "ImportResult", "import_cluster", "import_source_kind", "parse_release_overrides"]
