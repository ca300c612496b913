"""Broker configs changed through a broker's own listener (`kafka-configs --bootstrap-server
--alter --entity-type brokers`), Kafka's own tool against a live cluster and against
`kraftsim serve`.

A broker checks such a change against its dynamic-config rules before it forwards it to the
controller (ConfigAdminManager, DynamicBrokerConfig): the changes below are one or more of each
class kraftsim models there (`kraftsim.controller.broker_dynamic_configs`): a config that is
not dynamic, a per-broker config at the cluster default, a security config without its
listener prefix, a value its type or range refuses, a log or log cleaner config the new
configuration's own rules refuse or pass, a thread pool resized past half or double its current
size, and names Kafka does not know (which pass). Both sides are a cluster of one
controller (node 1) and one broker (node 2: two node JVMs and the tool's, no more), which the
tool talks to; each side
reports each run's exit code and output, and the BROKER ConfigRecords its controller wrote, in
log order. Every process is bounded and killed with its process group when the run ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kraftsim.conformance.broker_configs import Outcome, Written, broker_config_records
from kraftsim.conformance.dist import KafkaDist
from kraftsim.conformance.live_cluster import LiveCluster
from kraftsim.conformance.node import free_port
from kraftsim.conformance.reregistration import node_config
from kraftsim.conformance.tools import run_tool

_NAMED, _DEFAULT = ("--entity-name", "2"), ("--entity-default",)

#: The changes, in order (each sees what the earlier ones left).
CHANGES: tuple[tuple[str, ...], ...] = (
    # not dynamic, on the broker and at the default
    (*_NAMED, "--add-config", "log.dirs=/tmp/elsewhere"),
    (*_DEFAULT, "--add-config", "auto.create.topics.enable=true"),
    # a per-broker config at the default; a security config without a listener prefix
    (*_DEFAULT, "--add-config", "sasl.kerberos.service.name=kafka"),
    (*_NAMED, "--add-config", "ssl.keystore.type=PKCS12"),
    # values the type or range refuses
    (*_NAMED, "--add-config", "log.cleaner.threads=many"),
    (*_DEFAULT, "--add-config", "num.io.threads=0"),
    (*_DEFAULT, "--add-config", "log.message.timestamp.type=Sometime"),
    (*_NAMED, "--add-config", "unclean.leader.election.enable=maybe"),
    # thread pools: at least half, at most double the current size
    (*_NAMED, "--add-config", "num.io.threads=20"),
    (*_NAMED, "--add-config", "num.io.threads=3"),
    (*_NAMED, "--add-config", "num.io.threads=12"),
    (*_NAMED, "--add-config", "num.io.threads=24"),
    (*_DEFAULT, "--add-config", "background.threads=25"),
    (*_DEFAULT, "--add-config", "num.replica.fetchers=2"),
    (*_NAMED, "--add-config", "log.cleaner.threads=5"),
    (*_NAMED, "--add-config", "log.cleaner.threads=0"),
    (*_DEFAULT, "--add-config", "log.cleaner.threads=2"),
    # log configs: their definitions, then the new configuration's own rules
    (*_DEFAULT, "--add-config", "log.retention.ms=7200000"),
    (*_NAMED, "--add-config", "log.segment.bytes=104857600"),
    (*_DEFAULT, "--add-config", "compression.type=gzip,log.flush.interval.messages=1000"),
    (*_NAMED, "--add-config", "log.retention.ms=0"),
    (*_NAMED, "--add-config", "log.roll.ms=0"),
    (*_DEFAULT, "--add-config", "log.segment.bytes=100"),
    # the log cleaner's configs: its thread count left as it is
    (*_DEFAULT, "--add-config", "message.max.bytes=2000000,log.cleaner.io.buffer.size=1048576"),
    (*_NAMED, "--add-config", "log.cleaner.dedupe.buffer.size=1048576"),
    (*_DEFAULT, "--add-config", "producer.id.expiration.ms=60000"),
    # names Kafka does not know: forwarded and written (last: a broker describes them as sensitive,
    # so the tool of 3.x, which sends the whole set back, refuses to change a set holding one)
    (*_NAMED, "--add-config", "custom.note=hello"),
    (*_DEFAULT, "--add-config", "custom.team=blue"),
    (*_NAMED, "--delete-config", "custom.note"),
)
#: The releases whose tool and nodes the check runs.
RELEASES = ("3.7.2", "4.0.2", "4.4.0")


class LiveDuo(LiveCluster):
    """A live controller (1) and broker (2) on 127.0.0.1, formatted by the release's tool."""

    def __init__(self, dist: KafkaDist, work: Path) -> None:
        self.work = work
        controller_port, self.broker_port = free_port(), free_port()
        super().__init__(dist, {1: node_config(work / "controller", 1, "controller", controller_port, None),
                                2: node_config(work / "broker", 2, "broker", controller_port, self.broker_port)}, (2,))

    @property
    def metadata_log(self) -> Path:
        """The controller's metadata log directory."""
        return self.work / "controller" / "data" / "__cluster_metadata-0"


def _run(dist: KafkaDist, bootstrap: str, change: Sequence[str]) -> Outcome:
    done = run_tool(dist, "configs", ["--bootstrap-server", bootstrap, "--alter", "--entity-type", "brokers",
                                      *change])
    return done.code, done.text().replace(bootstrap, "ADDRESS")


def measure(dist: KafkaDist, work: Path,
            changes: Sequence[Sequence[str]] = CHANGES) -> tuple[list[Outcome], list[Written]]:
    """The tool's runs through broker 2 of a live cluster, and what its controller wrote."""
    with LiveDuo(dist, work) as cluster:
        runs = [_run(dist, f"127.0.0.1:{cluster.broker_port}", c) for c in changes]
    return runs, broker_config_records(cluster.metadata_log)


def served(dist: KafkaDist, work: Path,
           changes: Sequence[Sequence[str]] = CHANGES) -> tuple[list[Outcome], list[Written]]:
    """The same runs against `kraftsim serve` of the same shape and release."""
    from kraftsim.wire import serve

    directory = work / "served"
    with serve(controllers=1, brokers=1, release=dist.release.version, directory=directory) as k:
        runs = [_run(dist, k.address(2), c) for c in changes]
    return runs, broker_config_records(directory / "node-1" / "__cluster_metadata-0")


def main() -> None:
    """Prints the live side's runs and records for each release named (for reading off facts)."""
    import sys
    import tempfile

    from kraftsim.conformance.dist import fetch, resolve_release

    for version in sys.argv[1:] or RELEASES:
        dist = fetch(resolve_release(version))
        with tempfile.TemporaryDirectory(prefix="kraftsim-brokercfg-") as work:
            runs, written = measure(dist, Path(work))
        print(f"== {version}")
        for change, (code, text) in zip(CHANGES, runs):
            print(f"-- {' '.join(change)}: exit {code}")
            print("\n".join(line for line in text.splitlines() if not line.startswith("\tat ")))
        for w in written:
            print("written", w)


if __name__ == "__main__":
    main()
