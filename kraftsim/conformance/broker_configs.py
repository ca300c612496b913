"""Broker configs changed through a controller (`kafka-configs --bootstrap-controller --alter
--entity-type brokers`), Kafka's own tool against a live cluster and against `kraftsim serve`.

Through a controller listener Kafka checks a broker config change by the broker's id alone
(ControllerApis hands it to the controller; only a broker listener runs the broker's
dynamic-config rules): a value a broker would refuse is written, and every change writes a
ConfigRecord, even one that deletes a key nobody set (KAFKA-14136). Both sides are a cluster
of one controller (node 1) and two brokers (nodes 2 and 3); each side runs the same changes
(`changes`) with the release's own tool and reports each run's exit code and output,
and the BROKER ConfigRecords its controller wrote, in log order. Every process is bounded and
killed with its process group when the run ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kraftsim.conformance.dist import KafkaDist
from kraftsim.conformance.live_trio import LiveTrio, metadata_log_records
from kraftsim.conformance.tools import run_tool

#: One tool run: its exit code and its output, the address it was given replaced by ADDRESS.
Outcome = tuple[int, str]
#: A BROKER ConfigRecord: (broker id or "" for the cluster default, key, value or None).
Written = tuple[str, str, str | None]

#: The changes the tool makes through a controller: the cluster default. The
#: value a broker would refuse comes last: Kafka's nodes then describe their dynamic configs
#: without it (each node checks what it applies), and kraftsim, which does not model those
#: checks, describes what the metadata holds; a tool that describes the configs before it
#: changes them would see the difference.
DEFAULT_CHANGES: tuple[tuple[str, ...], ...] = (
    # (the controller's records follow its HashMap of names, not this order)
    ("--entity-default", "--add-config", "log.flush.interval.ms=1000,log.retention.ms=60000"),
    ("--entity-default", "--delete-config", "log.flush.interval.ms"),
    ("--entity-default", "--delete-config", "log.roll.ms"),  # never set: refused by the tool before 4.4
    ("--entity-default", "--add-config", "log.cleaner.threads=many"),
)
#: One broker's configs: with the tool of 4.4 on. Before it the tool first describes the configs
#: it changes (so it refuses to delete a key that is not set), and one broker's it asks of that
#: broker, which a client bootstrapped from controllers cannot reach: it gives up after its 60 s
#: timeout, on Kafka as on kraftsim (measured with 3.7.2 and 4.0.2).
NAMED_CHANGES: tuple[tuple[str, ...], ...] = (
    ("--entity-name", "2", "--add-config", "log.cleaner.threads=2"),
    ("--entity-name", "3", "--delete-config", "log.cleaner.threads"),
)
#: The releases whose tool the check runs. 3.x's kafka-configs (3.7 brought
#: `--bootstrap-controller`) describes a broker entity's configs and sends the whole set back
#: with the legacy AlterConfigs, so a config it leaves out is deleted; from 4.0 it sends the
#: changes with IncrementalAlterConfigs (the ConfigCommand of 4.0.2 and 4.3.1 calls no other;
#: 4.4 rewrote it in Java).
TOOL_RELEASES = ("3.7.2", "3.9.2", "4.0.2", "4.4.0")


def changes(release: str) -> tuple[tuple[str, ...], ...]:
    """The changes made with `release`'s tool."""
    major, minor = (int(x) for x in release.split(".")[:2])
    return DEFAULT_CHANGES + (NAMED_CHANGES if (major, minor) >= (4, 4) else ())


def broker_config_records(log_dir: Path) -> list[Written]:
    """The BROKER ConfigRecords of the metadata log at `log_dir`, in log order."""
    from kraftsim.image import BROKER

    return [(e.message.resource_name, e.message.name, e.message.value) for e in metadata_log_records(log_dir)
            if e.record_type.name == "ConfigRecord" and e.message.resource_type == BROKER]


def _run(dist: KafkaDist, bootstrap_controller: str, change: Sequence[str]) -> Outcome:
    done = run_tool(dist, "configs", ["--bootstrap-controller", bootstrap_controller, "--alter",
                                      "--entity-type", "brokers", *change])
    return done.code, done.text().replace(bootstrap_controller, "ADDRESS")


def measure(dist: KafkaDist, work: Path) -> tuple[list[Outcome], list[Written]]:
    """The tool's runs against a live cluster, and what its controller wrote."""
    with LiveTrio(dist, work) as cluster:
        runs = [_run(dist, cluster.bootstrap_controller, c) for c in changes(dist.release.version)]
    return runs, broker_config_records(cluster.metadata_log)


def served(dist: KafkaDist, work: Path) -> tuple[list[Outcome], list[Written]]:
    """The same runs against `kraftsim serve` of the same shape and release."""
    from kraftsim.wire import serve

    directory = work / "served"
    with serve(controllers=1, brokers=2, release=dist.release.version, directory=directory) as k:
        runs = [_run(dist, k.bootstrap_controllers, c) for c in changes(dist.release.version)]
    return runs, broker_config_records(directory / "node-1" / "__cluster_metadata-0")
