"""Benchmark of `kraftsim serve`: how soon a served cluster answers, and how many requests a second.

- start-up: from launching `python -m kraftsim serve DIR` (a cluster made by `cluster create`,
  so the time is the server's own: import, open, listen) to the first answered ApiVersions,
  for one combined node and for 3 controllers + 3 brokers;
- throughput and latency: ApiVersions (v3) and Metadata (v12, all topics of a cluster with
  10 topics) over 1 and 32 connections, each connection sending its next request when the
  answer to the last one came (a closed loop), for `--seconds` each; requests per second
  and p50 / p99 latency.

The server runs as its own process; the clients run in this one (asyncio, one thread), so
on a 2-core machine both share the cores with whatever else runs (the load is recorded).
Goals from issue 26: at least 5,000 ApiVersions/s, p99 under 5 ms at 32 connections.

    python benchmarks/bench_serve.py             # results/serve.md and results/serve.json
    python benchmarks/bench_serve.py --seconds 1 --no-write
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import load_average, utc_now  # noqa: E402
from kraftsim.sim import Simulation  # noqa: E402
from kraftsim.wire import encode_request  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RELEASE = "4.4.0"
API_VERSIONS = (18, 3, {"ClientSoftwareName": "bench", "ClientSoftwareVersion": "1"})
METADATA = (3, 12, {"Topics": None})
START_TIMEOUT_S = 120.0


def _make(tmp: Path, name: str, **shape: int) -> Path:
    d = tmp / name
    sim = Simulation.create(d, release=RELEASE, **shape)
    if shape.get("brokers") or shape.get("combined"):
        sim.create_topics(10, 3)
    sim.close()
    return d


def _spawn(directory: Path, ready: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "kraftsim", "serve", str(directory), "--ready-file", str(ready)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


async def _one(address: str, request: bytes) -> None:
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    size = int.from_bytes(await reader.readexactly(4), "big")
    await reader.readexactly(size)
    writer.close()


def start_up(directory: Path, tmp: Path) -> float:
    """Seconds from launching the server to the first answered ApiVersions."""
    ready = tmp / f"{directory.name}.ready"
    t0 = time.perf_counter()
    proc = _spawn(directory, ready)
    try:
        while not ready.exists():
            if proc.poll() is not None or time.perf_counter() - t0 > START_TIMEOUT_S:
                raise RuntimeError("the server did not start")
            time.sleep(0.002)
        address = json.loads(ready.read_text())["bootstrap_servers"].split(",")[0]
        asyncio.run(_one(address, encode_request(*API_VERSIONS[:2], 1, API_VERSIONS[2])))
        return time.perf_counter() - t0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        ready.unlink(missing_ok=True)


async def _load(address: str, request: tuple[int, int, dict], connections: int, seconds: float) -> dict[str, Any]:
    host, port = address.rsplit(":", 1)
    frame = encode_request(request[0], request[1], 1, request[2])
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            writer.write(frame)
            size = int.from_bytes(await reader.readexactly(4), "big")
            await reader.readexactly(size)
            latencies.append(time.perf_counter() - t)
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(connections)))
    elapsed = time.perf_counter() - t0
    latencies.sort()
    return {"requests": len(latencies), "per_second": round(len(latencies) / elapsed),
            "p50_ms": round(statistics.median(latencies) * 1000, 3),
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 3)}


def throughput(directory: Path, tmp: Path, seconds: float) -> list[dict[str, Any]]:
    ready = tmp / "load.ready"
    proc = _spawn(directory, ready)
    rows = []
    try:
        t0 = time.perf_counter()
        while not ready.exists():
            if proc.poll() is not None or time.perf_counter() - t0 > START_TIMEOUT_S:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        address = json.loads(ready.read_text())["bootstrap_servers"].split(",")[0]
        for name, request in (("ApiVersions v3", API_VERSIONS), ("Metadata v12", METADATA)):
            for connections in (1, 32):
                row = asyncio.run(_load(address, request, connections, seconds))
                rows.append({"request": name, "connections": connections, **row})
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="how long each load runs (default 3)")
    ap.add_argument("--no-write", action="store_true", help="print, do not write results/")
    args = ap.parse_args(argv)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="kraftsim-bench-serve-") as t:
        tmp = Path(t)
        one = _make(tmp, "one", combined=1)
        six = _make(tmp, "six", controllers=3, brokers=3)
        starts = {"1 combined": [start_up(one, tmp) for _ in range(3)],
                  "3 controllers + 3 brokers": [start_up(six, tmp) for _ in range(3)]}
        rows = throughput(six, tmp, args.seconds)
    result = {"when": utc_now(), "python": platform.python_version(), "cpus": os.cpu_count(), "release": RELEASE,
              "load_before": load_before, "load_after": load_average(),
              "start_up_s": {k: {"median": round(statistics.median(v), 3), "best": round(min(v), 3)}
                             for k, v in starts.items()},
              "load": rows, "seconds": args.seconds}
    lines = ["# kraftsim serve benchmark", "",
             f"`python benchmarks/bench_serve.py` on CPython {result['python']}, {os.cpu_count()} CPUs, {result['when']}, "
             f"Kafka {RELEASE} nodes. **Load:** {load_before} before, {result['load_after']} after (1 / 5 / 15 min).", "",
             "Start-up: launching `kraftsim serve DIR` to the first answered ApiVersions (3 runs).", "",
             "| cluster | median | best |", "|---|---:|---:|"]
    lines += [f"| {k} | {v['median']:.3f} s | {v['best']:.3f} s |" for k, v in result["start_up_s"].items()]
    lines += ["", f"Requests, closed loop, {args.seconds:g} s each, against broker 4 of 3 controllers + 3 brokers "
              "with 10 topics (server and client share the machine):", "",
              "| request | connections | requests/s | p50 | p99 |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['request']} | {r['connections']} | {r['per_second']} | {r['p50_ms']} ms | {r['p99_ms']} ms |"
              for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        (RESULTS / "serve.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "serve.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
