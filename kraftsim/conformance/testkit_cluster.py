"""Real Kafka of separate controllers and brokers in ONE JVM: Kafka's own test cluster (KafkaClusterTestKit).

Why: started as Kafka ships it, a cluster of 3 controllers and 3 brokers is six JVMs, more
than this project's machines may run at once. Kafka's test kit starts the same server
classes each node runs (SharedServer, ControllerServer, BrokerServer: each node with its
own configuration, listeners, log directories and Raft client) inside one JVM. What the
nodes share is the JVM itself: classes are loaded and compiled once instead of once per node, and there
is one heap. A start-up timed this way spares Kafka work six separate JVMs on the same cores
would each do, which makes it the conservative side of a comparison.

`java/KafkaTestKitCluster.java` is compiled against the release's jars plus the kit's (cached
beside the release, by source hash). The kit's jars come from Maven Central into
`<release cache>/testkit/` (only those the release does not already bring, so the nodes log
through the release's own logging jars):
- 4.x: `kafka-test-common-runtime` (package org.apache.kafka.common.test) and kafka-clients'
  test jar (org.apache.kafka.test.TestUtils, TestSslUtils). Maven Central does not serve
  kafka-clients' test jar for 4.4.0, and 4.4.0's kit needs it for every cluster, PLAINTEXT
  too: its build() creates an SSL trust store with TestSslUtils. So 4.4.0's kit cannot run
  from Maven Central; 4.3.1 is the newest 4.x release it runs on.
- 3.x (3.8 on, where TestKitNodes takes per-server properties): kafka_2.13's test jar (package
  kafka.testkit) with the test jars of kafka-clients and kafka-server-common.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Callable

from kraftsim.conformance.dist import GROUP, JARS_LIST, KafkaDist, KafkaUnavailable, copy_dependencies
from kraftsim.conformance.tools import compiled, find_javac, log_config_options

MAIN = "KafkaTestKitCluster"
SOURCE = Path(__file__).parent / "java" / f"{MAIN}.java"
OLDEST_LINE = (3, 8)  # TestKitNodes.Builder.setPerServerProperties, the fixed broker ports
DEFAULT_HEAP = "1g"  # one JVM for the whole cluster; the machine's rule for a single JVM
_JAR = re.compile(r"(?P<artifact>.+?)-(?P<version>\d[^-]*)(?:-(?P<classifier>.+))?\.jar")
_SINCE_4_0 = "// since 4.0"


def artifacts(dist: KafkaDist) -> list[tuple[str, str, str, str | None]]:
    """Maven coordinates of the test kit for this release (see the module docstring)."""
    version, line = dist.release.version, dist.release.line_tuple
    if line < OLDEST_LINE:
        raise KafkaUnavailable(f"Kafka's in-process test cluster with fixed broker ports needs Kafka "
                               f"{'.'.join(map(str, OLDEST_LINE))} or newer, not {version}")
    if line >= (4, 0):
        return [(GROUP, "kafka-test-common-runtime", version, None), (GROUP, "kafka-clients", version, "test")]
    return [(GROUP, "kafka_2.13", version, "test"), (GROUP, "kafka-clients", version, "test"),
            (GROUP, "kafka-server-common", version, "test")]


def jar_key(jar_name: str) -> tuple[str, str | None]:
    """(artifact, classifier) of a jar file name: which jar it is, whatever its version."""
    m = _JAR.fullmatch(jar_name)
    return (m.group("artifact"), m.group("classifier")) if m else (jar_name, None)


def testkit_jars(dist: KafkaDist, *, log: Callable[[str], None] = lambda line: None) -> tuple[Path, ...]:
    """The kit's jars the release does not bring (cached in `<release cache>/testkit/`)."""
    home = dist.home / "testkit"
    listing = home / JARS_LIST
    if listing.is_file():
        jars = tuple(home / "jars" / name for name in listing.read_text(encoding="utf-8").split())
        if jars and all(j.is_file() for j in jars):
            return jars
    log(f"fetching Kafka {dist.release.version}'s test kit from Maven Central into {home}")
    jars_dir = home / "jars"
    jars_dir.mkdir(parents=True, exist_ok=True)
    names = copy_dependencies(artifacts(dist), jars_dir, name=f"{dist.release.version}-testkit",
                              what=f"Kafka {dist.release.version}'s test kit")
    have = {jar_key(j.name) for j in dist.jars}
    extra = [n for n in names if jar_key(n) not in have]
    for name in names:
        if name not in extra:
            (jars_dir / name).unlink()
    listing.write_text("\n".join(extra) + "\n", encoding="utf-8")
    return tuple(jars_dir / n for n in extra)


def probe_source(dist: KafkaDist) -> str:
    """KafkaTestKitCluster.java as this release's kit spells it: before 4.0 the kit is
    kafka.testkit, picks its own base directory, names the broker listener EXTERNAL itself and
    binds each listener where its configuration says (lines ending "// since 4.0" and blocks
    between "// since 4.0 {" and "// } since 4.0" are left out)."""
    text = SOURCE.read_text(encoding="utf-8")
    if dist.release.line_tuple >= (4, 0):
        return text
    lines, skipping = [], False
    for ln in text.splitlines():
        if ln.strip() in (_SINCE_4_0 + " {", "// } " + _SINCE_4_0[3:]):
            skipping = ln.strip().endswith("{")
        elif not skipping and not ln.rstrip().endswith(_SINCE_4_0):
            lines.append(ln)
    return "\n".join(lines).replace("org.apache.kafka.common.test.", "kafka.testkit.") + "\n"


def with_testkit(dist: KafkaDist, *, log: Callable[[str], None] = lambda line: None) -> KafkaDist:
    """The release with the kit's jars on its classpath."""
    return dataclasses.replace(dist, jars=dist.jars + testkit_jars(dist, log=log))


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports free on `host` now (bound and released together, so they differ)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def command(dist: KafkaDist, *, controllers: int, brokers: int, base_dir: Path, broker_ports: list[int],
            heap: str = DEFAULT_HEAP, log_file: Path | None = None) -> list[str]:
    """The java command line of a test-kit cluster (`dist` from with_testkit). It serves until its
    standard input closes; broker i listens on 127.0.0.1:broker_ports[i]."""
    classes = compiled(dist, SOURCE, probe_source(dist), "testkit-cluster", find_javac(dist), classpath=True)
    # The JVM options a live node runs with (tools.java_command), so both Kafka rows share a basis.
    return [str(dist.java.path), f"-Xmx{heap}", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
            *log_config_options(dist, log_file=log_file), "-cp", f"{classes}{os.pathsep}{dist.classpath}", MAIN,
            str(controllers), str(brokers), str(base_dir), *map(str, broker_ports)]


def spawn(cmd: list[str], cwd: Path, out: Path) -> subprocess.Popen[bytes]:
    """Start the cluster in its own process group (stdout and stderr to `out`); closing its stdin stops it."""
    with open(out, "wb") as sink:
        return subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)


def marks(out: Path) -> dict[str, int]:
    """The probe's progress lines (formatted / started / ready: ms since the JVM started)."""
    found: dict[str, int] = {}
    try:
        text = out.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return found
    for line in text.splitlines():
        m = re.fullmatch(r"(formatted|started|ready) (\d+)", line.strip())
        if m:
            found[m.group(1)] = int(m.group(2))
    return found
