"""The one way the tests run a `kraftsim` command in-process: exit status, stdout, stderr."""

from __future__ import annotations

import pytest

from kraftsim.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `kraftsim ARGV...`; argparse's own exits count as statuses, and no traceback may show."""
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err
