"""A small simulated cluster per release line, snapshotted: the input every shell test browses.

The same steps as the conformance cases (kraftsim.conformance.cases.shell_lines): one
controller, two brokers, two topics of two partitions, a broker config and an ACL. The
files in data/ are what Kafka's own MetadataShell printed for these snapshots.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from kraftsim.cli.main import main

DATA = Path(__file__).with_name("data")


def _kraftsim(*argv: str) -> str:
    """Run a kraftsim command quietly; its stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    assert code == 0, argv
    return out.getvalue()


def make_cluster(root: Path, line: str) -> tuple[Path, Path, Path]:
    """(cluster directory, snapshot of its controller's log end, that log's segment)."""
    sim = root / f"sim-{line}"
    _kraftsim("cluster", "create", str(sim), "--controllers", "1", "--brokers", "2", "--release", line, "--seed", "0")
    _kraftsim("topics", "--cluster", str(sim), "create", "--count", "2", "--partitions", "2",
              "--replication-factor", "2")
    _kraftsim("configs", "--cluster", str(sim), "--alter", "--entity-type", "brokers", "--entity-name", "2",
              "--add-config", "log.retention.ms=1000")
    _kraftsim("acls", "--cluster", str(sim), "--add", "--allow-principal", "User:alice", "--operation", "Read",
              "--topic", "topic-0")
    metadata = sim / "node-1" / "__cluster_metadata-0"
    segment = sorted(metadata.glob("*.log"))[0]
    return sim, _snapshot(root / f"snap-{line}", metadata), segment


def _snapshot(out: Path, metadata: Path) -> Path:
    end = json.loads(_kraftsim("log", "dump", "--json", str(metadata)).splitlines()[-1])["offset"] + 1
    out.mkdir()
    _kraftsim("snapshot", "create", "--at", str(end), "-o", str(out), str(metadata))
    return sorted(out.glob("*.checkpoint"))[0]


_made: dict[str, tuple[Path, Path, Path]] = {}


@pytest.fixture(scope="session")
def shell_inputs(tmp_path_factory: pytest.TempPathFactory):
    """line -> (cluster directory, snapshot, segment), built once per session."""

    def get(line: str) -> tuple[Path, Path, Path]:
        if line not in _made:
            _made[line] = make_cluster(tmp_path_factory.mktemp(f"shell-{line}"), line)
        return _made[line]

    return get


def quota_snapshot(directory: Path, *, with_default: bool = False) -> Path:
    """A snapshot at 3.9-IV0 of a one-broker cluster with client quotas (one of them for the
    default user when `with_default`), written as a Kafka node writes one."""
    from kraftsim.image.synthetic import ClusterShape, cluster_records
    from kraftsim.protocol.entries import Payload
    from kraftsim.protocol.registry import default_registry
    from kraftsim.storage import SnapshotId, write_snapshot
    from kraftsim.versions import default_catalog

    quota = default_registry()["ClientQuotaRecord"]
    entity = quota.nested["EntityData"]

    def record(parts: list[tuple[str, str | None]], key: str, value: float) -> Payload:
        return Payload(quota, 0, quota.new(entity=[entity(entity_type=t, entity_name=n) for t, n in parts], key=key,
                                           value=value, remove=False))

    shape = ClusterShape(brokers=1, topics=1, partitions=1, replication_factor=1, scram_users=0, delegation_tokens=0,
                         configs_per_topic=0)
    records = list(cluster_records(shape, default_catalog(), "3.9-IV0"))
    records += [record([("user", "alice")], "producer_byte_rate", 1024.0),
                record([("client-id", "app(1)"), ("user", "bob")], "consumer_byte_rate", 1.5e7),
                record([("ip", "10.0.0.1")], "connection_creation_rate", 0.0001)]
    if with_default:
        records.append(record([("user", None)], "producer_byte_rate", 2048.0))
    directory.mkdir()
    return write_snapshot(directory, SnapshotId(len(records), 1), records, last_contained_log_timestamp=1735689600000,
                          time_ms=1735689600000, fsync=False)
