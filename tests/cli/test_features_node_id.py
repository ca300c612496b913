"""`kraftsim features describe --node-id N`: an id the cluster does not have is invalid
input (exit 2) told in one line, as in every other command; a known id is answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_support import run


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_unknown_node_id_exits_2_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      extra: list[str]) -> None:
    d = str(tmp_path / "c")
    assert run(capsys, "cluster", "create", d, "--controllers", "1", "--brokers", "1", "--release", "3.9")[0] == 0
    code, out, err = run(capsys, "features", "--cluster", d, "describe", "--node-id", "99", *extra)
    assert (code, out) == (2, "")
    assert err.strip() == "--node-id 99: the cluster has no node 99"
    code, out, _ = run(capsys, "features", "--cluster", d, "describe", "--node-id", "2", *extra)
    assert code == 0 and "metadata.version" in out
