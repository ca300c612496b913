"""Helpers for the simulated-cluster tests: run the CLI, read what the nodes wrote, and check
that every node's files are sound (log verify, the kafka-python peer, equal images).

Clusters are built through the `kraftsim` command itself. A scenario used by several tests
is built once per module (`prototype`) and copied per test, to keep the folder fast.
"""

from __future__ import annotations

import importlib
import json
import shutil
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from kraftsim.cli.main import main as kraftsim_main
from kraftsim.image import image_digest
from kraftsim.image import load_path
from kraftsim.protocol.batch import parse_batch, split_batches, BatchSlice
from kraftsim.protocol.entries import decode_batch
from kraftsim.protocol.registry import default_registry
from kraftsim.storage import MetadataLog, read_meta_properties

MV = "metadata.version"
FAILED = "The update failed for all features since the following feature had an error: "


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `kraftsim ARGV...`; returns (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = kraftsim_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 0, f"kraftsim {' '.join(map(str, argv))} failed ({code}):\n{out}\n{err}"
    return out


def cli(*argv: object) -> None:
    """Run `kraftsim ARGV...` where no capsys is at hand (module fixtures); it must succeed."""
    code = kraftsim_main([str(a) for a in argv])
    assert code == 0, f"kraftsim {' '.join(map(str, argv))} failed ({code})"


def create(capsys, directory: Path, *args: str) -> str:
    return ok(capsys, "cluster", "create", directory, *args)


def status(capsys, directory: Path) -> dict[str, Any]:
    """`cluster status --json`, whether the cluster is healthy (exit 0) or not (exit 1: the
    tests inject faults on purpose)."""
    code, out, err = run(capsys, "cluster", "status", directory, "--json")
    assert code in (0, 1), f"kraftsim cluster status {directory} failed ({code}):\n{out}\n{err}"
    result = json.loads(out)
    assert code == (0 if result.get("health", {"healthy": True})["healthy"] else 1)
    return result


def describe(capsys, directory: Path, *args: str) -> dict[str, dict[str, str]]:
    """`features describe` as {feature: {column: value}}; `args` may start with tool options
    (`--release R`) followed by "describe"."""
    argv = list(args) if "describe" in args else ["describe", *args]
    out = ok(capsys, "features", "--cluster", directory, *argv)
    table = {}
    for line in out.splitlines():  # tab-separated up to Kafka 4.2, fixed-width columns from 4.3
        parts = re.split(r"\t|\s{2,}(?=(?:SupportedMinVersion|SupportedMaxVersion|FinalizedVersionLevel|Epoch): )", line)
        cols = dict(part.rstrip().split(": ", 1) for part in parts)
        table[cols.pop("Feature")] = cols
    return table


def node_dirs(directory: Path) -> list[Path]:
    return sorted((p for p in Path(directory).iterdir() if p.name.startswith("node-")),
                  key=lambda p: int(p.name.split("-")[1]))


def records(node_dir: Path) -> list:
    """Every record of a node's replica (control records included), in offset order."""
    with MetadataLog.open(Path(node_dir) / "__cluster_metadata-0", read_only=True) as log:
        return list(log.entries())


def data(node_dir: Path, type_name: str) -> list:
    return [e for e in records(node_dir) if e.record_type.name == type_name]


def feature_records(node_dir: Path) -> list[tuple[str, int]]:
    return [(e.message.name, e.message.feature_level) for e in data(node_dir, "FeatureLevelRecord")]


def directory_id(node_dir: Path) -> str:
    return read_meta_properties(Path(node_dir) / "meta.properties").meta.directory_id


def record_files(directory: Path) -> list[Path]:
    """Every log segment and snapshot of every node."""
    return sorted(p for d in node_dirs(directory) for p in (d / "__cluster_metadata-0").iterdir()
                  if p.suffix in (".log", ".checkpoint"))


def _peer():
    """The kafka-python peer decoder of the codec tests (skips where it is unavailable)."""
    return importlib.import_module("tests.protocol.test_peer_kafka_python")


def assert_cluster_sound(capsys, directory: Path) -> None:
    """What a real cluster's files would satisfy:

    - every segment and snapshot passes `kraftsim log verify`;
    - the kafka-python peer reads every batch (CRC included) and decodes every record to
      exactly what `kraftsim log dump --json` shows, and writes each body back byte for byte;
    - `load_path` on each node directory gives the same image on every node whose replica
      ends at the same offset (the running nodes all do).
    """
    files = record_files(directory)
    assert files
    ok(capsys, "log", "verify", *files)
    peer = _peer()
    registry = default_registry()
    for path in files:
        raw = path.read_bytes()
        slices = [p for p in split_batches(raw) if isinstance(p, BatchSlice)]
        peer_batches = list(peer.MemoryRecords(raw))
        assert len(peer_batches) == len(slices)
        for piece, pb in zip(slices, peer_batches):
            assert pb.validate_crc(), f"{path}: bad CRC at offset {pb.base_offset}"
            entries = decode_batch(parse_batch(piece.data), registry)
            for entry, rec in zip(entries, list(pb)):
                view, ptype, body, version, message = peer.peer_record(rec, pb.is_control_batch)
                expected = {"offset": rec.offset, "epoch": pb.leader_epoch, "control": pb.is_control_batch, **view}
                assert entry.to_json() == expected, f"{path} offset {rec.offset}"
                assert ptype.encode(message, version) == body, f"{path} offset {rec.offset}: peer re-encode"
    by_end: dict[int, set[str]] = {}
    for d in node_dirs(directory):
        loaded = load_path(d)
        assert not loaded.faults, (d, loaded.faults)
        by_end.setdefault(loaded.end_offset, set()).add(image_digest(loaded.image))
    for end, digests in by_end.items():
        assert len(digests) == 1, f"nodes whose logs end at {end} disagree on the image"


def tree_bytes(directory: Path) -> dict[str, bytes]:
    """Every file below `directory`, by relative path."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(Path(directory).rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def prototypes(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`prototypes(name, build)`: a cluster directory built once per module by `build(dir)`."""
    built: dict[str, Path] = {}
    root = tmp_path_factory.mktemp("prototypes")

    def get(name: str, build: Callable[[Path], None]) -> Path:
        if name not in built:
            d = root / name
            build(d)
            built[name] = d
        return built[name]

    return get


def copy_of(prototype: Path, tmp_path: Path) -> Path:
    target = tmp_path / prototype.name
    shutil.copytree(prototype, target)
    return target
