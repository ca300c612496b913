"""Serving Kafka's protocol: start-up time, requests per second and latency, against any host:port.

Run from the repository root:

    python -m benchmarks.bench_serve --kafka 4.4.0      # a real combined node on this machine
    python -m benchmarks.bench_serve --serve scenarios/S.toml   # `kraftsim serve S.toml`, started here
    python -m benchmarks.bench_serve --target 127.0.0.1:9092 --label "kraftsim serve"
    python -m benchmarks.bench_serve --kafka 4.4.0 --quick   # fewer requests; serve.quick.{md,json}
    python -m benchmarks.bench_serve --cluster 4.3.1    # 3 controllers + 3 brokers: real Kafka, then serve

Results go to benchmarks/results/serve.{md,json}; each run adds or replaces its target's
row (by label), so a real Kafka node and `kraftsim serve` measured in separate runs sit in
one table, each with its run's date and load.

What is measured (`measure_target`, usable from other code on any listener):

- load: for ApiVersions (v3, the Java client's first request) and Metadata (v12, all
  topics), over 1 connection and over 32 connections, each connection sends its next
  request when the previous answer has arrived (as a client waits for its answer), for a
  fixed number of requests per connection. Requests per second = all answers / wall
  seconds of the phase; p50 / p99 are per-request latencies (send to whole answer). Every
  answer's correlation id is checked, and the first answer of each kind is fully decoded.
  A warm-up phase of the same shape runs first and is not counted.
- start-up (`--kafka`, `--serve`): time from the server process's spawn to the first
  answered ApiVersions on its (first) broker listener, polled every 10 ms with fresh
  connections. `kraftsim serve` is started with `--ready-file` (contract 7), which says
  where its listeners are; the clock runs from the spawn, not from the ready file. Its
  modules are compiled to bytecode first, as `pip install` leaves an installed package;
  `--serve T --no-bytecode` measures the start-up alone without any bytecode cache (every
  module compiled from source), as a row of its own.

- start-up of 3 controllers + 3 brokers (`--cluster VERSION`), in one run: real Kafka of that
  shape, then `kraftsim serve` of a cluster created with `kraftsim cluster create
  --controllers 3 --brokers 3 --release VERSION`. Six JVMs are more than this machine runs at
  once, so the real cluster is Kafka's own in-process test cluster (KafkaClusterTestKit:
  kraftsim.conformance.testkit_cluster), six nodes' real server classes in ONE JVM. That
  loads and compiles Kafka's classes once for all six nodes, work six JVMs would each do:
  the conservative basis, stated beside the figure. Both sides are polled on every broker at
  once; the figures are the first broker's answer and the last broker's. Kafka's test kit
  runs from Maven Central on 3.8-4.3 (4.4.0 lacks the kafka-clients test jar it needs).
  Without Java, Maven or the jars it says why and records nothing.

Bounded: every phase has a deadline, every connection a timeout; a real node is always
stopped (its process group is killed after a grace period).

The load client is Python asyncio on the same machine as the server (2 cores shared), so
the figures are what one Python client process can drive; the client's CPU time is
recorded beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks._common import load_average, utc_now, write_results  # noqa: E402
from kraftsim.wire import API_KEYS, encode_request, parse_response, read_frame  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
PHASE_TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 10.0
START_TIMEOUT_S = 180.0

WORKLOADS = {
    "ApiVersions v3": (API_KEYS["ApiVersions"], 3, {"ClientSoftwareName": "kraftsim-bench", "ClientSoftwareVersion": "0"}),
    "Metadata v12": (API_KEYS["Metadata"], 12, {"Topics": None, "AllowAutoTopicCreation": False}),
}


def percentile(sorted_values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank method."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), round(q * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


async def _connection(host: str, port: int, frame: bytes, correlation_id: int, count: int, api_key: int, version: int,
                      latencies: list[float], check_first: bool) -> None:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
    try:
        expected = struct.pack(">i", correlation_id)
        for i in range(count):
            t0 = time.perf_counter()
            writer.write(frame)
            answer = await asyncio.wait_for(read_frame(reader), CONNECT_TIMEOUT_S)
            latencies.append(time.perf_counter() - t0)
            if answer is None or answer[:4] != expected:
                raise RuntimeError(f"{host}:{port}: a wrong or missing answer to request {i}")
            if check_first and i == 0:
                parse_response(api_key, version, answer)  # the whole answer decodes
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass


async def _phase(host: str, port: int, workload: str, connections: int, per_connection: int) -> dict[str, Any]:
    api_key, version, body = WORKLOADS[workload]
    latencies: list[float] = []
    frames = [encode_request(api_key, version, 1000 + c, body, client_id=f"bench-{c}") for c in range(connections)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(
        _connection(host, port, frames[c], 1000 + c, per_connection, api_key, version, latencies, c == 0)
        for c in range(connections))), PHASE_TIMEOUT_S)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    latencies.sort()
    return {"workload": workload, "connections": connections, "requests": len(latencies), "wall_s": wall,
            "requests_per_s": len(latencies) / wall, "p50_ms": percentile(latencies, 0.50) * 1e3,
            "p99_ms": percentile(latencies, 0.99) * 1e3, "mean_ms": statistics.fmean(latencies) * 1e3,
            "client_cpu_s": cpu}


def cpu_seconds(pid: int | None) -> float | None:
    """The CPU time (user + system, all threads) a process has used so far: a figure that does
    not grow with the machine's load as wall time does. None off Linux or for a gone process."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


ONE_COMBINED = "one combined node"


def first_answers(addresses: list[tuple[str, int]], t0: float, deadline: float,
                  pid: int | None) -> list[tuple[float, float | None]]:
    """Poll every listener at once until each has answered ApiVersions: for each, the seconds from
    `t0` (perf_counter) to its first answer and the server's CPU seconds at that moment."""
    import threading

    from kraftsim.conformance.wire_client import wait_for_api_versions

    found: list[tuple[float, float | None] | BaseException | None] = [None] * len(addresses)

    def poll(i: int, host: str, port: int) -> None:
        try:
            wait_for_api_versions(host, port, timeout=max(1.0, deadline - time.monotonic()))
            found[i] = (time.perf_counter() - t0, cpu_seconds(pid))
        except BaseException as e:  # reported below, on the caller's thread
            found[i] = e

    threads = [threading.Thread(target=poll, args=(i, h, p), daemon=True) for i, (h, p) in enumerate(addresses)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, deadline - time.monotonic()) + 5)
    answered = []
    for (host, port), got in zip(addresses, found):
        if not isinstance(got, tuple):
            raise RuntimeError(f"{host}:{port}: no ApiVersions answer ({got or 'still waiting'})")
        answered.append(got)
    return answered


def startup_fields(answers: list[tuple[float, float | None]]) -> dict[str, Any]:
    """The start-up figures of a run: the first broker's answer (the headline) and every broker's."""
    first, last = min(answers, key=lambda a: a[0]), max(answers, key=lambda a: a[0])
    return {"startup_s": first[0], "startup_cpu_s": first[1], "startup_all_s": last[0], "startup_all_cpu_s": last[1],
            "brokers_polled": len(answers)}


def measure_target(host: str, port: int, *, requests: int = 5000, log: Callable[[str], None] = print,
                   server_pid: int | None = None) -> list[dict[str, Any]]:
    """Load phases against a listener: each workload over 1 and 32 connections, `requests` answers
    per phase; with `server_pid`, also the server's CPU microseconds per answer."""
    rows = []
    for workload in WORKLOADS:
        for connections in (1, 32):
            per = max(1, requests // connections)
            asyncio.run(_phase(host, port, workload, connections, max(1, per // 10)))  # warm-up
            cpu0 = cpu_seconds(server_pid)
            row = asyncio.run(_phase(host, port, workload, connections, per))
            cpu1 = cpu_seconds(server_pid)
            row["server_cpu_us_per_request"] = (None if cpu0 is None or cpu1 is None
                                                else (cpu1 - cpu0) / row["requests"] * 1e6)
            server = row["server_cpu_us_per_request"]
            log(f"{host}:{port} {workload:15s} x{connections:<3d} {row['requests_per_s']:9,.0f} req/s  "
                f"p50 {row['p50_ms']:7.3f} ms  p99 {row['p99_ms']:7.3f} ms  (client cpu {row['client_cpu_s']:.2f} s"
                + (f", server cpu {server:.0f} us/request)" if server is not None else ")"))
            rows.append(row)
    return rows


# ----------------------------------------------------------------------------- a real Kafka node


def start_to_first_api_versions(spawn: Callable[[], subprocess.Popen], host: str, port: int) -> tuple[subprocess.Popen, float]:
    """Spawn a server and return it with the seconds until it first answered ApiVersions."""
    from kraftsim.conformance.wire_client import wait_for_api_versions

    t0 = time.perf_counter()
    proc = spawn()
    try:
        wait_for_api_versions(host, port, timeout=START_TIMEOUT_S)
    except BaseException:
        _stop(proc)
        raise
    return proc, time.perf_counter() - t0


def _stop(proc: subprocess.Popen) -> None:
    import signal

    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass


def measure_kafka(version: str, *, requests: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    """A real Kafka combined node (conformance.node's configuration, heap 384 MiB): start-up and load."""
    from kraftsim.conformance.dist import fetch, resolve_release
    from kraftsim.conformance.node import LiveNode
    from kraftsim.conformance.tools import java_command

    dist = fetch(resolve_release(version), log=log)
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-serve-") as tmp:
        node = LiveNode(dist, Path(tmp), heap="384m")
        node.format()

        def spawn() -> subprocess.Popen:
            cmd = java_command(dist, "server", [str(node.config)], heap=node.heap, log_file=node.log_file)
            with open(node.dir / "server.out", "wb") as out:
                return subprocess.Popen(cmd, cwd=node.dir, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)

        proc, startup = start_to_first_api_versions(spawn, "127.0.0.1", node.broker_port)
        startup_cpu = cpu_seconds(proc.pid)
        try:
            log(f"Kafka {version}: first ApiVersions answered {startup:.2f} s after spawn ({startup_cpu} s CPU)")
            rows = measure_target("127.0.0.1", node.broker_port, requests=requests, log=log, server_pid=proc.pid)
        finally:
            _stop(proc)
    return {"label": f"Apache Kafka {version}, one combined node (JVM, -Xmx{node.heap})", "shape": ONE_COMBINED,
            "startup_s": startup, "startup_cpu_s": startup_cpu, "rows": rows}


def measure_spawned(cmd: list[str], ready_file: Path, label: str, *, requests: int,
                    log: Callable[[str], None] = print, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A server started by `cmd` that writes contract 7's ready file: start-up (every broker
    listener the ready file names is polled; the headline is the first answer) and load on its
    first broker (no load phase when `requests` is 0)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        ready: dict[str, Any] | None = None
        while ready is None:
            if proc.poll() is not None:
                raise RuntimeError(f"{' '.join(cmd)} exited with code {proc.returncode} before it was ready")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{' '.join(cmd)} wrote no ready file within {START_TIMEOUT_S:g} s")
            try:
                ready = json.loads(ready_file.read_text())
            except (OSError, ValueError):  # not there yet (it is written atomically)
                time.sleep(0.005)
        brokers = [_host_port(str(n["broker"])) for n in ready.get("nodes", []) if n.get("broker")] \
            or [_host_port(str(ready["bootstrap_servers"]).split(",")[0])]
        entry = {"label": label, **startup_fields(first_answers(brokers, t0, deadline, proc.pid))}
        log(f"{label}: first ApiVersions answered {entry['startup_s']:.3f} s after spawn ({entry['startup_cpu_s']} s "
            f"CPU), by all {len(brokers)} brokers {entry['startup_all_s']:.3f} s")
        host, port = brokers[0]
        entry["rows"] = measure_target(host, port, requests=requests, log=log, server_pid=proc.pid) if requests else []
    finally:
        _stop(proc)
    return entry


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def measure_serve(target: str, *, requests: int, log: Callable[[str], None] = print,
                  bytecode: bool = True, shape: str = ONE_COMBINED) -> dict[str, Any]:
    """`kraftsim serve TARGET` (a cluster directory or a scenario file), started and stopped here.

    With `bytecode` the package's modules are compiled first, as `pip install` leaves them, so
    start-up is what an installed kraftsim takes; without, the server reads no bytecode cache
    (an empty `-X pycache_prefix`) and compiles every module it imports from source."""
    import compileall

    import kraftsim

    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-serve-") as tmp:
        ready = Path(tmp) / "ready.json"
        label = f"kraftsim serve {Path(target).name}"
        env = None
        if bytecode:
            compileall.compile_dir(str(Path(kraftsim.__file__).parent), quiet=1)
            python = [sys.executable]
        else:
            python = [sys.executable, "-X", f"pycache_prefix={Path(tmp) / 'no-pycache'}"]
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
            label += " (no bytecode cache)"
        cmd = [*python, "-m", "kraftsim", "serve", target, "--ready-file", str(ready)]
        if target.endswith(".toml"):
            cmd += ["--keep", str(Path(tmp) / "cluster")]
        return {**measure_spawned(cmd, ready, label, requests=requests, log=log, env=env), "shape": shape}


KIT_BASIS = ("Kafka's own in-process test cluster (KafkaClusterTestKit): the six nodes' real server classes in ONE "
             "JVM, which loads and compiles Kafka's classes once for all six, work six JVMs would each do: the "
             "conservative side for this comparison; heap -Xmx{heap}, the JVM options of the one-node row")


def measure_kafka_cluster(version: str, *, controllers: int = 3, brokers: int = 3,
                          log: Callable[[str], None] = print) -> dict[str, Any]:
    """Real Kafka of separate controllers and brokers in one JVM (kraftsim.conformance.testkit_cluster):
    from the JVM's spawn to the first ApiVersions answered by a broker, and by every broker."""
    from kraftsim.conformance import testkit_cluster as kit
    from kraftsim.conformance.dist import fetch, resolve_release

    dist = kit.with_testkit(fetch(resolve_release(version), log=log), log=log)
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-serve-") as tmp:
        work = Path(tmp)
        ports = kit.free_ports(brokers)
        cmd = kit.command(dist, controllers=controllers, brokers=brokers, base_dir=work / "cluster",
                          broker_ports=ports, log_file=work / "server.log")  # compiles the probe first
        t0 = time.perf_counter()
        proc = kit.spawn(cmd, work, work / "probe.out")
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            answers = first_answers([("127.0.0.1", p) for p in ports], t0, deadline, proc.pid)
            last_mark = "ready" if dist.release.line_tuple >= (4, 0) else "started"  # 3.x: no ready mark
            while last_mark not in kit.marks(work / "probe.out") and proc.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            marks = kit.marks(work / "probe.out")
        finally:
            if proc.stdin is not None:
                proc.stdin.close()  # the probe shuts the cluster down
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                _stop(proc)
    shape = f"{controllers} controllers + {brokers} brokers"
    entry = {"label": f"Apache Kafka {version}, {shape} in one JVM (KafkaClusterTestKit, -Xmx{kit.DEFAULT_HEAP})",
             "shape": shape, **startup_fields(answers), "jvm_marks_ms": marks,
             "basis": KIT_BASIS.format(heap=kit.DEFAULT_HEAP), "rows": []}
    log(f"{entry['label']}: first ApiVersions answered {entry['startup_s']:.2f} s after spawn "
        f"({entry['startup_cpu_s']} s CPU), by all {brokers} brokers {entry['startup_all_s']:.2f} s; JVM marks {marks}")
    return entry


def measure_serve_cluster(version: str, *, controllers: int = 3, brokers: int = 3,
                          log: Callable[[str], None] = print) -> dict[str, Any]:
    """`kraftsim serve` of a cluster of that shape and release (`kraftsim cluster create`), start-up only."""
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-serve-") as tmp:
        directory = Path(tmp) / f"{controllers}-controllers-{brokers}-brokers-{version}"
        create = [sys.executable, "-m", "kraftsim", "cluster", "create", str(directory), "--controllers",
                  str(controllers), "--brokers", str(brokers), "--release", version]
        done = subprocess.run(create, cwd=REPO, capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(create[1:])}: exit {done.returncode}: {done.stderr.strip()}")
        return measure_serve(str(directory), requests=0, log=log, shape=f"{controllers} controllers + {brokers} brokers")


def measure_in_process(release: str, *, repeats: int = 5, log: Callable[[str], None] = print) -> dict[str, Any]:
    """`kraftsim.serve(combined=1, release=R)` in a process that has imported kraftsim (a test
    suite's case): from the call to the first answered ApiVersions, wall and this process's CPU,
    the median of `repeats`."""
    import kraftsim
    from kraftsim.conformance.wire_client import wait_for_api_versions

    with kraftsim.serve(combined=1, release=release):
        pass  # warm: imports and caches
    walls, cpus = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        with kraftsim.serve(combined=1, release=release) as k:
            host, _, port = k.bootstrap_servers.rpartition(":")
            wait_for_api_versions(host, int(port), timeout=START_TIMEOUT_S)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    label = f"kraftsim.serve(combined=1, release={release!r}) in a warm process"
    startup, cpu = statistics.median(walls), statistics.median(cpus)
    log(f"{label}: first ApiVersions answered {startup * 1e3:.0f} ms after the call ({cpu * 1e3:.0f} ms CPU)")
    return {"label": label, "startup_s": startup, "startup_cpu_s": cpu, "rows": []}


# ----------------------------------------------------------------------------- results


def _merge(path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {"targets": []}
    data["targets"] = [t for t in data["targets"] if t["label"] != entry["label"]] + [entry]
    return data


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Serving Kafka's protocol: start-up, throughput, latency",
        "",
        "Generated by `python -m benchmarks.bench_serve`. Each target's row comes from its own run (date and load "
        "average below). The load client is one Python asyncio process on the same 2-core machine; each connection "
        "waits for an answer before its next request. Requests per second = answers / wall seconds of the phase; "
        "p50/p99 = per-request latency.",
        "",
        "Goals (issue 26): at least 5,000 ApiVersions/s on one core, p99 under 5 ms at 32 connections, start-up at "
        "least 10x faster than the real node.",
        "",
        "Wall-clock figures grow with the machine's load (other work shares the 2 cores; the load average of "
        "each run is given). The CPU columns do not: the server process's own CPU time (all threads) until its "
        "first answer, and per answer during a phase. `kraftsim serve` starts from compiled bytecode, as an "
        "installed package does; the row marked (no bytecode cache) compiles every module it imports from source.",
        "",
        "| target | run | start to first ApiVersions (s) | server CPU until then (s) | start to ApiVersions from every broker (s) |",
        "|---|---|---:|---:|---:|",
    ]
    for t in data["targets"]:
        lines.append(f"| {t['label']} | {t['generated']}, load {t['load_average_before']} | "
                     f"{num(t.get('startup_s'), '.3f')} | {num(t.get('startup_cpu_s'), '.3f')} | "
                     f"{num(t.get('startup_all_s') if t.get('brokers_polled', 1) > 1 else None, '.3f')} |")
    lines += startup_ratios(data["targets"])
    lines += ["", "| target | workload | connections | requests | req/s | p50 ms | p99 ms | client CPU s | "
                  "server CPU us/request |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for t in data["targets"]:
        for r in t["rows"]:
            lines.append(f"| {t['label']} | {r['workload']} | {r['connections']} | {r['requests']:,} | "
                         f"{r['requests_per_s']:,.0f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['client_cpu_s']:.2f} | "
                         f"{num(r.get('server_cpu_us_per_request'), '.0f')} |")
    lines.append("")
    return "\n".join(lines)


def startup_ratios(targets: list[dict[str, Any]]) -> list[str]:
    """Per cluster shape (and release, where recorded): each kraftsim row's start-up against the
    latest real Kafka row of that shape."""
    lines: list[str] = []

    def group(t: dict[str, Any]) -> tuple[str, str]:
        return t.get("shape", ONE_COMBINED), t.get("release", "")

    for shape, release in dict.fromkeys(map(group, targets)):
        same = [t for t in targets if group(t) == (shape, release) and t.get("startup_s")]
        kafka = [t for t in same if t["label"].startswith("Apache Kafka")]
        if not kafka:
            continue
        ref = kafka[-1]
        lines += ["", f"Start-up, {shape}, against {ref['label']} (goal: at least 10x faster):", ""]
        if ref.get("basis"):
            runs = f"; medians of {ref['runs']} start-ups per side, taking turns" if ref.get("runs", 1) > 1 else ""
            lines += [f"Basis: {ref['basis']}. Both sides poll every broker at once from their spawn; the headline "
                      f"is the first broker's answer, the every-broker ratio in brackets{runs}.", ""]
        for t in same:
            if t in kafka:
                continue
            cpu = (f", {ref['startup_cpu_s'] / t['startup_cpu_s']:.1f}x less CPU"
                   if t.get("startup_cpu_s") and ref.get("startup_cpu_s") else "")
            every = (f" ({ref['startup_all_s'] / t['startup_all_s']:.1f}x to every broker)"
                     if t.get("brokers_polled", 1) > 1 and ref.get("startup_all_s") and t.get("startup_all_s") else "")
            lines.append(f"- {t['label']}: {ref['startup_s'] / t['startup_s']:.1f}x faster by the wall clock{every}{cpu}")
        for t in same:
            if t.get("startup_s_runs"):
                walls = " / ".join(f"{x:.3f}" for x in t["startup_s_runs"])
                cpus = " / ".join(num(x, ".2f") for x in t.get("startup_cpu_s_runs", []))
                lines.append(f"  - runs of {t['label']}: {walls} s to the first answer ({cpus} s CPU)")
        loads = next((t["load_averages"] for t in same if t.get("load_averages")), None)
        if loads:
            lines.append(f"  - load average after each pair of runs: {'; '.join(loads)}")
    return lines


def num(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--kafka", metavar="VERSION", help="start a real Kafka combined node of this release")
    what.add_argument("--serve", metavar="TARGET", help="start `kraftsim serve TARGET` (a cluster directory or scenario)")
    what.add_argument("--target", metavar="HOST:PORT", help="measure a listener that is already running")
    what.add_argument("--cluster", metavar="VERSION",
                      help="start-up of 3 controllers + 3 brokers: real Kafka of this release (its in-process test "
                           "cluster, one JVM), then `kraftsim serve` of the same shape and release")
    what.add_argument("--in-process", metavar="RELEASE",
                      help="start-up of kraftsim.serve(combined=1, release=RELEASE) inside this (warm) process")
    parser.add_argument("--label", help="the target's name in the results (with --target)")
    parser.add_argument("--repeats", type=int, default=3, metavar="N",
                        help="with --cluster: start-ups of each side, taking turns; the medians are recorded")
    parser.add_argument("--quick", action="store_true", help="fewer requests; results go to serve.quick.*")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="with --serve: start-up only, the server compiling every module from source "
                             "(no bytecode cache), as its own row")
    args = parser.parse_args(argv)
    requests = 640 if args.quick else 6400
    stem = "serve.quick" if args.quick else "serve"
    if args.cluster:
        return run_cluster(args.cluster, stem, repeats=args.repeats)
    load_before = load_average()
    if args.kafka:
        entry = measure_kafka(args.kafka, requests=requests)
    elif args.serve:
        entry = measure_serve(args.serve, requests=0 if args.no_bytecode else requests, bytecode=not args.no_bytecode)
    elif args.in_process:
        entry = measure_in_process(args.in_process)
    else:
        host, _, port = args.target.rpartition(":")
        if not host or not port.isdigit():
            parser.error(f"--target must be HOST:PORT, not {args.target!r}")
        entry = {"label": args.label or args.target, "startup_s": None,
                 "rows": measure_target(host, int(port), requests=requests)}
    record(stem, entry, load_before)
    return 0


def record(stem: str, entry: dict[str, Any], load_before: str) -> None:
    """Add (or replace) the target's row in the results, with its run's date and load."""
    entry.update(generated=utc_now(), load_average_before=load_before, load_average_after=load_average(),
                 python=platform.python_version())
    data = _merge(RESULTS / f"{stem}.json", entry)
    write_results(RESULTS, stem, data, markdown(data))


def median_entry(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row for several start-ups of the same target: each figure the median of the runs, the
    runs' own figures kept beside it."""
    entry = dict(runs[-1])
    for key in ("startup_s", "startup_cpu_s", "startup_all_s", "startup_all_cpu_s"):
        values = [r[key] for r in runs if r.get(key) is not None]
        entry[key] = statistics.median(values) if values else None
        entry[f"{key}_runs"] = [r.get(key) for r in runs]
    entry["runs"] = len(runs)
    return entry


def run_cluster(version: str, stem: str, *, repeats: int) -> int:
    """--cluster: real Kafka of 3 controllers + 3 brokers and kraftsim serve of the same, taking
    turns (one server at a time), `repeats` start-ups each; nothing recorded (exit 0) when real
    Kafka cannot run here."""
    from kraftsim.conformance.dist import KafkaUnavailable

    load_before = load_average()
    kafka: list[dict[str, Any]] = []
    serve: list[dict[str, Any]] = []
    loads = []
    for _ in range(repeats):
        try:
            kafka.append(measure_kafka_cluster(version))
        except KafkaUnavailable as e:
            print(f"skipped: real Kafka {version} of 3 controllers + 3 brokers cannot run here: {e}")
            return 0
        serve.append(measure_serve_cluster(version))
        loads.append(load_average())
    for runs in (kafka, serve):
        record(stem, {**median_entry(runs), "release": version, "load_averages": loads}, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
