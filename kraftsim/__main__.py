"""`python -m kraftsim` is the same as the `kraftsim` command."""

import sys

from kraftsim.cli.main import main

sys.exit(main())
