"""The production-scale what-if (scenarios/production-scale-1m.toml) at 10k, 100k and 1M partitions.

3 controllers and 30 brokers; topics x 50 partitions at replication factor 3, created on
3.9; controllers rolled to 4.0, a snapshot on every node, brokers rolled, metadata.version
finalized. The shipped file is run as it is for 1,000,000 partitions and with its topic count
changed for the smaller sizes, each size in a fresh process (`python3 -m kraftsim scenario
run FILE --seed 1 --json`), as a user runs it: wall and CPU seconds, peak RSS (of that
process alone), whether it passed, and the load average before and after, since the machine
is shared. Goals (issue 32): 1M partitions in at most 60 s and 6 GB.

`--without-deep-checks` runs the same with the deep invariants not checked
(`benchmarks/_without_deep_checks.py`: a measuring tool, not a product option), which splits a
run's cost into the simulation's own and its deep checks'.

`--io-floor` also writes, after each size, as many bytes of files as that run wrote, with
nothing else to do (`io_floor`): the machine's own time for the files Kafka's defaults make
the run write (a snapshot on every node after every 20 MB of records, each node's log), a
floor under the run's wall time that no speed-up of the simulator goes below.

`--profile SIZE` also runs that size under cProfile and writes its top functions (by
cumulative and by own time) into the results. `--timeout` bounds each run; a size that does
not finish in time is recorded as such.

    PYTHONPATH=. python3 benchmarks/bench_scale.py [--sizes 10000,100000,1000000] [--profile 10000]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import load_average, utc_now, write_results  # noqa: E402
from kraftsim.storage.fileio import WRITE_PIECE  # noqa: E402

SCENARIO = ROOT / "scenarios" / "production-scale-1m.toml"
RESULTS = ROOT / "benchmarks" / "results"
#: What the figures mean and what is left, written by hand, put after the table of every run.
NOTES = RESULTS / "scale-notes.md"
#: The scenario run without its deep checks (`--without-deep-checks`).
WITHOUT_DEEP_CHECKS = ROOT / "benchmarks" / "_without_deep_checks.py"
PARTITIONS_PER_TOPIC = 50
GOAL_S, GOAL_GB = 60, 6
#: `io_floor`'s files: about a 1M snapshot's size.
FLOOR_FILE_BYTES = 128 << 20


def scenario_text(partitions: int) -> str:
    """The shipped file with its topic count (over its create-topics steps, and expected) set for `partitions`."""
    topics = partitions // PARTITIONS_PER_TOPIC
    text = SCENARIO.read_text(encoding="utf-8")
    steps = len(re.findall(r"(?m)^count = \d+$", text))  # (the topics are created in equal requests)
    assert steps and topics % steps == 0, f"{topics} topics do not split into {steps} create-topics steps"
    text = re.sub(r"(?m)^count = \d+$", f"count = {topics // steps}", text)
    text, m = re.subn(r"(?m)^topics = \d+$", f"topics = {topics}", text)
    assert m == 1, "the shipped scenario no longer has one `topics` line in [expect]"
    return re.sub(r"(?m)^slow = true\n", "", text)  # (so that code from before the key runs it too)


def run_size(partitions: int, timeout_s: float, profile_to: Path | None = None,
             max_gb: float | None = None, code: Path = ROOT, label: str = "this tree",
             deep_checks: bool = True) -> dict[str, object]:
    """One fresh process running the scenario at `partitions`: its figures. `max_gb`: the run is
    stopped once its resident set passes that (instead of pressing a shared machine).
    `deep_checks=False`: through WITHOUT_DEEP_CHECKS (its row's code says so)."""
    with tempfile.TemporaryDirectory(prefix="kraftsim-scale-") as tmp:
        path = Path(tmp) / f"scale-{partitions}.toml"
        path.write_text(scenario_text(partitions), encoding="utf-8")
        cmd = [sys.executable]
        if profile_to is not None:
            cmd += ["-m", "cProfile", "-o", str(profile_to)]
        cmd += ["-m", "kraftsim"] if deep_checks else [str(WITHOUT_DEEP_CHECKS)]
        cmd += ["scenario", "run", str(path), "--seed", "1", "--json"]
        # (TMPDIR inside this run's folder: a run stopped by the watchdog leaves no cluster behind)
        env = dict(os.environ, PYTHONPATH=str(code), TMPDIR=tmp)
        load_before = load_average()
        out_path, err_path = Path(tmp) / "out.json", Path(tmp) / "err.txt"
        start = time.perf_counter()
        with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
            proc = subprocess.Popen(cmd, cwd=code, env=env, stdout=out_f, stderr=err_f)
            status, usage, stopped, peak_disk = _wait(proc, timeout_s, None if max_gb is None else int(max_gb * 2**30),
                                                      Path(tmp))
        wall = time.perf_counter() - start
        out, err = out_path.read_bytes(), err_path.read_bytes()
    passed = b'"passed":true' in out[:200]
    row: dict[str, object] = {
        "code": label if deep_checks else f"{label}, deep checks off", "partitions": partitions, "max_gb": max_gb, "topics": partitions // PARTITIONS_PER_TOPIC, "wall_s": round(wall, 1),
        "passed": passed, "stopped": stopped, "profiled": profile_to is not None,
        "load_before": load_before, "load_after": load_average(), "exit": os.waitstatus_to_exitcode(status),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
        # (the kernel's share and the new pages it gave: what the last looks at 1M measured by hand)
        "user_s": round(usage.ru_utime, 1), "system_s": round(usage.ru_stime, 1), "page_faults": usage.ru_minflt,
        # (the bytes of files it wrote, in the kernel's 512-byte blocks, and the most it held at once)
        "written_gb": round(usage.ru_oublock * 512 / 1e9, 2), "peak_disk_gb": round(peak_disk / 1e9, 2),
    }
    if not passed and stopped is None:
        row["failed_steps"] = _failed_steps(out)
        row["stderr_tail"] = err.decode("utf-8", "replace")[-500:]
    return row


def _rss_bytes(pid: int) -> int:
    """The resident set of process `pid` now (0 when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _used_bytes(directory: Path) -> int:
    """The bytes in use on the file system that holds `directory`."""
    st = os.statvfs(directory)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _wait(proc: subprocess.Popen[bytes], timeout_s: float, max_bytes: int | None,
          directory: Path) -> tuple[int, resource.struct_rusage, str | None, int]:
    """Wait for `proc` and reap it with os.wait4, for the resource use of that one process;
    it is killed after `timeout_s` or once its resident set passes `max_bytes` (a shared
    machine). (wait status, rusage, why it was stopped or None, the most its file system
    held above what it held at the start: the run's files at their peak, as sampled.)"""
    deadline, stopped = time.monotonic() + timeout_s, None
    base = peak = _used_bytes(directory)
    while True:
        peak = max(peak, _used_bytes(directory))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)  # (reaped here, not by Popen)
            return status, usage, stopped, peak - base
        if stopped is None and time.monotonic() > deadline:
            stopped = f"stopped after {timeout_s:.0f} s"
        elif stopped is None and max_bytes is not None and _rss_bytes(proc.pid) > max_bytes:
            stopped = f"stopped at {max_bytes / 2**30:.1f} GiB resident"
        if stopped is not None:
            proc.kill()
        time.sleep(0.2)


def io_floor(total_bytes: int, live_bytes: int, directory: Path) -> dict[str, object]:
    """What writing `total_bytes` of files costs this machine with nothing else to do: files
    of FLOOR_FILE_BYTES written in WRITE_PIECE pieces (as kraftsim writes), the oldest
    deleted once `live_bytes` are held (a run's files go as Kafka's retention deletes them),
    the rest at the end. Wall and system seconds of the writes (the deletions at the end not
    counted), the load average."""
    piece = bytes(range(256)) * (WRITE_PIECE // 256)
    keep = max(1, live_bytes // FLOOR_FILE_BYTES)
    held: list[Path] = []
    load_before, written, files = load_average(), 0, 0
    with tempfile.TemporaryDirectory(prefix="kraftsim-floor-", dir=directory) as tmp:
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        while written < total_bytes:
            path, files = Path(tmp) / f"file-{files}", files + 1
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            size = min(FLOOR_FILE_BYTES, total_bytes - written)
            try:
                for at in range(0, size, len(piece)):
                    os.pwrite(fd, memoryview(piece)[:size - at], at)
            finally:
                os.close(fd)
            written += size
            held.append(path)
            if len(held) > keep:
                held.pop(0).unlink()
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    return {"written_gb": round(written / 1e9, 2), "written_bytes": written, "files": files,
            "live_gb": round(keep * FLOOR_FILE_BYTES / 1e9, 2),
            "wall_s": round(wall, 1), "system_s": round(after.ru_stime - before.ru_stime, 1),
            "load_before": load_before, "load_after": load_average()}


def floor_after(row: dict[str, object]) -> dict[str, object]:
    """`io_floor` of the bytes the run of `row` wrote and held, beside the temporary files."""
    written, held = float(row["written_gb"]), float(row["peak_disk_gb"])  # type: ignore[arg-type]
    floor = io_floor(int(written * 1e9), int(held * 1e9), Path(tempfile.gettempdir()))
    return {"code": row["code"], "partitions": row["partitions"], **floor}


def _failed_steps(out: bytes) -> list[str]:
    """The steps of a `--json` result that failed, as `op: error`."""
    try:
        result = json.loads(out)
    except ValueError:
        return []
    return [f"{s.get('op')}: {s.get('error')}" for s in result.get("steps", []) if not s.get("ok")]


def top_functions(profile: Path, sort: str, n: int) -> str:
    """The `n` first lines of a profile sorted by `sort`, as text."""
    buf = io.StringIO()
    stats = pstats.Stats(str(profile), stream=buf)
    stats.strip_dirs().sort_stats(sort).print_stats(n)
    text = buf.getvalue()
    lines = text[text.index("ncalls"):].rstrip().splitlines() if "ncalls" in text else text.splitlines()
    return "\n".join(lines)


def markdown(rows: list[dict[str, object]], profiles: dict[str, str],
             floors: Sequence[dict[str, object]] = ()) -> str:
    out = ["# The production-scale what-if (issue 32 item 1)", "",
           f"Run {utc_now()} on {os.cpu_count()} cores (shared: the load average is beside every figure). "
           "`scenarios/production-scale-1m.toml` (3 controllers, 30 brokers, topics x 50 partitions at RF 3, "
           "created on 3.9, controllers rolled to 4.0, a snapshot on every node, brokers rolled, "
           "metadata.version finalized), each size in a fresh process, `scenario run FILE --seed 1 --json`. "
           f"Goal at 1,000,000 partitions: at most {GOAL_S} s and {GOAL_GB} GB (taken as GiB; "
           "memory figures here are MiB and GiB).", "",
           "| code | partitions | wall s | CPU s | of which system s | page faults | peak RSS MiB | files written GB "
           "| files held at most GB | passed | load before | load after |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        wall = f"> {r['wall_s']}" if r.get("stopped") else str(r["wall_s"])
        prof = " (under cProfile)" if r.get("profiled") else ""
        failed = "; ".join(str(x) for x in r.get("failed_steps") or []  # type: ignore[attr-defined]
                           if "not run:" not in str(x))  # (the first failure, not the steps it stopped)
        stop = f" ({r['stopped']})" if r.get("stopped") else ("" if r["passed"] else f" (exit {r['exit']}: {failed})")
        faults = f"{r['page_faults']:,}" if "page_faults" in r else "-"  # (rows from before it was kept: -)
        out.append(f"| {r.get('code', 'this tree')}{prof} | {r['partitions']:,} | {wall} | {r.get('cpu_s', '-')} | "
                   f"{r.get('system_s', '-')} | {faults} | {r.get('peak_rss_mb', '-')} | {r.get('written_gb', '-')} | "
                   f"{r.get('peak_disk_gb', '-')} | {r['passed']}{stop} | {r['load_before']} | {r['load_after']} |")
    if floors:
        out += ["", "## The files alone: the same bytes written with nothing else to do (`--io-floor`)", "",
                "What this machine takes to write as many bytes of files as the run above it wrote, in files of "
                f"{FLOOR_FILE_BYTES >> 20} MiB written in {WRITE_PIECE >> 10} KiB pieces, holding at most what the run "
                "held at once (the oldest deleted first). The run has to write these files, so this estimates the floor "
                "under its wall time that no speed-up of the simulator goes below.", "",
                "| after the run of | partitions | written GB | held at most GB | wall s | of which system s "
                "| load before | load after |",
                "|---|---:|---:|---:|---:|---:|---|---|"]
        for f in floors:
            out.append(f"| {f['code']} | {f['partitions']:,} | {f['written_gb']} | {f['live_gb']} | {f['wall_s']} | "
                       f"{f['system_s']} | {f['load_before']} | {f['load_after']} |")
    if NOTES.exists():  # (what the figures mean, written by hand: kept across runs)
        out += ["", NOTES.read_text(encoding="utf-8").rstrip()]
    for title, text in profiles.items():
        out += ["", f"## {title}", "", "```", text, "```"]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="partition counts, comma-separated")
    parser.add_argument("--profile", type=int, default=None, help="also profile this size")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds each run may take")
    parser.add_argument("--before-profile", type=Path, default=None,
                        help="a cProfile dump of an earlier run (before a change), shown beside this run's")
    parser.add_argument("--before-label", default="before", help="what the earlier profile was of")
    parser.add_argument("--max-gb", type=float, default=None, help="stop a run whose resident set passes this (GiB)")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="the checkout whose kraftsim runs (another one, e.g. main, for figures from before)")
    parser.add_argument("--label", default="this tree", help="what --code is, in the results")
    parser.add_argument("--without-deep-checks", action="store_true",
                        help="run without the deep invariants as well, after each size (what the checks cost)")
    parser.add_argument("--io-floor", action="store_true",
                        help="after each size, write as many bytes of files as it wrote, alone (the floor under its time)")
    parser.add_argument("--append", action="store_true", help="keep the rows and profiles already in the results")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows: list[dict[str, object]] = []
    profiles: dict[str, str] = {}
    floors: list[dict[str, object]] = []
    if args.append and (args.results / "scale.json").exists():
        old = json.loads((args.results / "scale.json").read_text(encoding="utf-8"))
        rows, profiles, floors = old["rows"], old["profiles"], old.get("floors", [])
    run = {"max_gb": args.max_gb, "code": args.code, "label": args.label}
    for size in sizes:
        rows.append(run_size(size, args.timeout, **run))
        print(rows[-1], flush=True)
        if args.io_floor:
            floors.append(floor_after(rows[-1]))
            print(floors[-1], flush=True)
        if args.without_deep_checks:
            rows.append(run_size(size, args.timeout, deep_checks=False, **run))
            print(rows[-1], flush=True)
    if args.before_profile is not None:
        profiles[f"Profile {args.before_label}, by cumulative time"] = top_functions(args.before_profile, "cumulative", 40)
        profiles[f"Profile {args.before_label}, by own time"] = top_functions(args.before_profile, "tottime", 25)
    if args.profile is not None:
        with tempfile.TemporaryDirectory(prefix="kraftsim-scale-prof-") as tmp:
            prof = Path(tmp) / "p.prof"
            row = run_size(args.profile, args.timeout, profile_to=prof, **run)
            rows.append(row)
            if prof.exists():
                profiles[f"Profile at {args.profile:,} partitions, by cumulative time (load {row['load_before']})"] = \
                    top_functions(prof, "cumulative", 40)
                profiles[f"Profile at {args.profile:,} partitions, by own time"] = top_functions(prof, "tottime", 25)
    write_results(args.results, "scale", {"rows": rows, "profiles": profiles, "floors": floors},
                  markdown(rows, profiles, floors))


if __name__ == "__main__":
    main()
