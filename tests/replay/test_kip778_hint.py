"""A log written under the kip-778 policy fails Kafka's replay (its snapshots hold images
rewritten at the lowered metadata.version); replay says so and names the option that reads
it as written, instead of leaving a user with digests that differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import run
from tests.paths import REPO


@pytest.fixture(scope="module")
def lossy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kept = tmp_path_factory.mktemp("kip778") / "kept"
    from kraftsim.cli.main import main

    assert main(["scenario", "run", str(REPO / "scenarios" / "downgrade-lossy-kip778.toml"), "--keep", str(kept)]) == 0
    return kept


def test_a_failing_replay_of_a_lowered_log_names_the_kip_778_option(capsys: pytest.CaptureFixture[str],
                                                                    lossy_cluster: Path) -> None:
    capsys.readouterr()
    code, out, _ = run(capsys, "replay", str(lossy_cluster / "node-1"))
    assert code == 1 and "FAIL snapshot + log after it = whole log" in out
    assert ("  hint: this log lowers metadata.version from 3.8-IV0 (20) to 3.7-IV1 (16); a log written under "
            "kraftsim's kip-778 policy (lossy downgrades, beyond Kafka) replays as written only with "
            "--mv-change kip-778") in out
    code, out, _ = run(capsys, "replay", "--json", str(lossy_cluster / "node-1"))
    assert code == 1 and "--mv-change kip-778" in json.loads(out)["results"][0]["hint"]


def test_the_hint_is_not_given_where_the_replay_passes(capsys: pytest.CaptureFixture[str], lossy_cluster: Path) -> None:
    capsys.readouterr()
    code, out, _ = run(capsys, "replay", "--mv-change", "kip-778", str(lossy_cluster / "node-1"))
    assert code == 0 and "hint:" not in out and "FAIL" not in out
    code, out, _ = run(capsys, "replay", "--json", "--mv-change", "kip-778", str(lossy_cluster / "node-1"))
    assert code == 0 and "hint" not in json.loads(out)["results"][0]
