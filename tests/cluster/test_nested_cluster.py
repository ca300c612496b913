"""A new cluster is never made inside another cluster's directory or a Kafka log directory:
Kafka refuses to load a log directory holding a folder that is not a partition's, and the new
cluster's writes would go around the other cluster's lock. Every command that makes a cluster
says so and writes nothing; beside the other cluster, it is made as usual."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.conftest import create, run, tree_bytes


def _inside(d: Path) -> list[tuple[Path, str]]:
    """Places inside cluster `d`, with what the refusal names."""
    return [(d / "node-2" / "inner", f"lies inside the Kafka log directory {d / 'node-2'}"),
            (d / "node-1" / "a" / "b", f"lies inside the Kafka log directory {d / 'node-1'}"),
            (d / "inner", f"lies inside the cluster directory {d}")]


@pytest.mark.parametrize("engine", ["events", "ticks"])
def test_cluster_create_inside_another_cluster_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          engine: str) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "3.9", "--engine", engine)
    before = tree_bytes(d)
    for inner, says in _inside(d):
        code, out, err = run(capsys, "cluster", "create", inner, "--controllers", "1", "--release", "3.9",
                             "--engine", engine)
        assert (code, out) == (2, ""), err  # (invalid input, as `import` and `--keep` refuse it)
        assert says in err and "make the cluster outside it" in err and len(err.strip().splitlines()) == 1
    assert tree_bytes(d) == before
    create(capsys, tmp_path / "beside", "--controllers", "1", "--release", "3.9", "--engine", engine)


def test_import_scenario_keep_and_serve_keep_refuse_a_place_inside_a_cluster(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "2", "--release", "3.9")
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[cluster]\ncontrollers = 1\nbrokers = 1\nrelease = "3.9"\n', encoding="utf-8")
    before = tree_bytes(d)
    for inner, says in _inside(d):
        code, _, err = run(capsys, "cluster", "import", d / "node-3", inner)  # (not a source)
        assert code == 2 and says in err, err
        code, _, err = run(capsys, "scenario", "run", scenario, "--keep", inner)
        assert code == 2 and f"--keep {inner}: {says}" in err, err
        code, _, err = run(capsys, "serve", scenario, "--keep", inner, "--for", "10")
        assert code == 2 and says in err, err
    assert tree_bytes(d) == before
