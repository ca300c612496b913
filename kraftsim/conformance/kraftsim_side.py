"""Running kraftsim's own CLI in this process, captured like a Kafka tool's run.

The other side of every comparison is the `kraftsim` command a user would type, so the
cases call its entry point (not its library) with stdout and stderr captured. Files are
made reproducible with SOURCE_DATE_EPOCH and `--seed` where the command has one; what
stays random on Kafka's side is masked by the comparisons, not fixed here.
"""

from __future__ import annotations

import contextlib
import io
import os
import traceback
from typing import Iterator, Sequence

from kraftsim.conformance.tools import ToolRun

FIXED_EPOCH_S = "1700000000"


@contextlib.contextmanager
def _env(changes: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_kraftsim(argv: Sequence[str]) -> ToolRun:
    """`kraftsim ARGV` in-process: exit code and both streams; a crash is exit code -1 with its traceback."""
    from kraftsim.cli.main import main  # the CLI imports every command group; only load it when used

    out, err = io.StringIO(), io.StringIO()
    with _env({"SOURCE_DATE_EPOCH": FIXED_EPOCH_S}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = int(main(list(argv)) or 0)
        except SystemExit as e:  # argparse usage errors
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        except Exception:  # noqa: BLE001 - a crash is a result to report, not to propagate
            traceback.print_exc(file=err)
            code = -1
    return ToolRun(tuple(argv), code, out.getvalue(), err.getvalue())
