"""`python -m kraftsim` is the same as the `kraftsim` command."""

import sys

try:
    from kraftsim.cli.main import run
except KeyboardInterrupt:  # Ctrl-C while the command is still loading: as `main` answers it
    print("kraftsim: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(run())
