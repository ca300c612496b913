"""Where the shared material is, defined once for every test.

The real Kafka files live in `../shared/oracle` beside the repository root. A checkout
elsewhere (a git worktree, CI) points at them with `KRAFTSIM_SHARED=/path/to/shared`.
Tests that need them skip when the folder is absent, instead of failing.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KRAFTSIM_SHARED") or REPO.parent / "shared")
ORACLE = SHARED / "oracle"
KAFKA_SCHEMAS = SHARED / "reference" / "kafka-schemas"
