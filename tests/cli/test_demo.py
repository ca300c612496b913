"""The main job (`kraftsim demo`) without Spark: it runs the story scenarios end to end, the
clusters it keeps are fully determined by the seeds, and what it reports agrees with the
files it wrote. (The Spark half is tested with the pipeline's shared session in tests/pipeline.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kraftsim.cli.main import main
from kraftsim.demo import DEMO_SCENARIOS, MAIN_SCENARIO, matrix_inputs, run_demo
from kraftsim.image import MvChangeHandling, load_path
from kraftsim.versions import default_catalog


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_demo_command_is_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "a")]) == 0
    first = capsys.readouterr().out
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "b")]) == 0
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")  # clusters and HTML reports alike
    assert "replay verification: passed" in first
    spans = re.findall(r"PASS: \d+ steps, (\S+) s simulated; report ", first)
    assert spans and all(re.fullmatch(r"\+\d+\.\d{3}", x) for x in spans)  # simulated time as every command prints it
    for name in DEMO_SCENARIOS:
        assert f"  {name}: PASS, report {tmp_path / 'a' / 'reports' / name}.html" in first
    assert "metadata.version 3.8-IV0 -> 3.7-IV1 carried out on nodes 1,2,3,4,5,6 (lossy: 7 item(s) dropped)" in first
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "a")]) == 1  # refuses to overwrite an earlier run
    assert main(["demo", "--no-spark", "--out", str(tmp_path / "c"), "--seed", "7"]) == 0
    assert _tree(tmp_path / "a") != _tree(tmp_path / "c")  # the seed reaches the bytes


def test_the_reported_losses_are_what_the_nodes_lost(tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_demo(tmp_path, spark=False, say=lines.append)
    assert result.passed and result.verified
    change = result.results[MAIN_SCENARIO].mv_changes[0]
    assert {line.split(":")[0] for line in change.losses} == {"broker log dirs", "replica directory assignment"}
    target = default_catalog().metadata_version("3.7-IV1").level
    # Every node ends at the lossy metadata.version, without what was reported.
    for node in sorted(p for p in result.cluster_dir.iterdir() if p.name.startswith("node-")):
        image = load_path(node, mv_change=MvChangeHandling.KIP_778).image
        assert image.metadata_version == target
        assert all(not b.directories for b in image.cluster.brokers.values())
    for name in DEMO_SCENARIOS:
        page = result.reports[name].read_text(encoding="utf-8")
        assert page.count('class="lane"') == len(result.results[name].final.nodes)
    assert any(line.startswith("4. leader-crash-mid-roll") for line in lines)
    numbers = [line.split(".")[0] for line in lines if line[:1].isdigit()]
    assert numbers == [str(n) for n in range(1, len(DEMO_SCENARIOS) + 2)]  # each section its own number
    # The downgrade-matrix inputs name their cluster: five clusters' `node-1` states stay apart.
    items = matrix_inputs(result.clusters)
    assert len({item["rel"] for item in items}) == len(items) >= len(DEMO_SCENARIOS)
    assert {item["set"] for item in items} == set(DEMO_SCENARIOS)
    assert all(item["rel"].startswith(f"{item['set']}/node-1/") for item in items)
    # The 4.2 -> 4.4 path: the cluster ends at 4.4-IV2 on every node, with share.version 2.
    upgraded = result.results["upgrade-4.2-to-4.4-release-version"]
    assert upgraded.final.metadata_version.level == 33 and upgraded.final.finalized["share.version"] == 2
    assert {n.release for n in upgraded.final.nodes} == {"4.4.0"}


def test_force_replaces_only_an_earlier_runs_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`--out . --force` removed the whole working directory (then failed, exit 70), and
    `--force` on a folder of the user's own files removed them; both are refused now, with
    everything kept. A folder holding only what a run writes is still replaced."""
    (tmp_path / "mine.txt").write_text("mine")
    (tmp_path / "reports").mkdir()
    monkeypatch.chdir(tmp_path)
    for out in (".", str(tmp_path)):
        assert main(["demo", "--no-spark", "--force", "--out", out]) == 1
        assert "holds mine.txt, which no demo run writes" in capsys.readouterr().err
    assert main(["demo", "--no-spark", "--force", "--out", "mine.txt"]) == 1
    assert "mine.txt exists and is not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "reports"]
    assert (tmp_path / "mine.txt").read_text() == "mine"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_out_folder_nothing_can_be_made_in_is_refused_first(capsys: pytest.CaptureFixture[str]) -> None:
    """`--out /proc/demo` (root may write there by its permission bits) ran into the first
    scenario, which was then blamed: "scenarios/....toml: key `cluster`: the cluster cannot be
    created". It is refused first now, as invalid input naming the flag."""
    assert main(["demo", "--no-spark", "--out", "/proc/demo"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "kraftsim: error: --out /proc/demo: cannot create the folder /proc/demo: No such file or directory\n"
