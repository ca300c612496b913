"""A 4.2 → 4.4 upgrade path through the CLI: roll the binaries, then the features, with the
4.4 tool; a 4.4 cluster formats in 4.4's layout and still starts (kafka-facts §11)."""

from __future__ import annotations

from pathlib import Path

from tests.cluster.conftest import create, ok, run, status


def test_roll_4_2_to_4_4_then_upgrade_features(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "3", "--brokers", "2", "--release", "4.2.0")
    assert (d / "node-1" / "bootstrap.checkpoint").is_file()  # the 4.2 tool's layout
    ok(capsys, "cluster", "roll", d, "--release", "4.4.0")
    # the cluster's own tool is now 4.4.0: it knows 4.4-IV2 and share.version 2
    out = ok(capsys, "features", "--cluster", d, "upgrade", "--release-version", "4.4-IV2")
    assert "metadata.version was upgraded to 33." in out and "share.version was upgraded to 2." in out
    st = status(capsys, d)
    assert st["finalized"]["metadata.version"] == 33 and st["finalized"]["share.version"] == 2
    # and no way back below 4.3-IV0 without losing metadata (Kafka refuses)
    code, out, err = run(capsys, "features", "--cluster", d, "downgrade", "--metadata", "4.2")
    assert code == 1 and "Refusing to perform the requested downgrade because it might delete metadata information." in out


def test_a_4_4_cluster_formats_in_4_4s_layout_and_runs(tmp_path: Path, capsys) -> None:
    d = tmp_path / "c"
    create(capsys, d, "--controllers", "1", "--brokers", "1", "--release", "4.4.0")
    assert not list(d.rglob("bootstrap.checkpoint"))
    assert (d / "node-1" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint").is_file()
    st = status(capsys, d)
    assert st["finalized"]["metadata.version"] == 33
    assert all(n["running"] for n in st["nodes"]) and st["leader"] == 1
    broker = next(n for n in st["nodes"] if n["roles"] == ["broker"])
    assert broker["supported"]["metadata.version"] == [7, 33] and broker["applied_offset"] == st["finalized_epoch"]
    home = d / f"node-{broker['id']}"
    assert [p.name for p in home.iterdir() if p.is_file()] == ["meta.properties"]  # a broker: nothing else
    assert not (home / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint").exists()
