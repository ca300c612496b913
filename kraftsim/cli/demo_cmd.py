"""`kraftsim demo`: the main job on its default settings (see kraftsim/demo.py)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from kraftsim.cli.progress import StatusLine, add_progress_flag, show_progress
from kraftsim.errors import KraftsimError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="the whole chain: shipped what-if scenarios (upgrade, failed rollback, lossy "
                                    "downgrade, a crash mid-roll) with HTML reports, their logs verified, then the "
                                    "downgrade-matrix and snapshot-cost jobs on Spark")
    p.add_argument("--out", default="kraftsim-demo", metavar="DIR", help="where to write everything (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="replace DIR if an earlier run left it")
    p.add_argument("--seed", type=int, help="override the scenarios' own seeds")
    p.add_argument("--no-spark", action="store_true", help="stop after verifying the clusters' logs")
    p.add_argument("--master", metavar="URL", help="a Spark master for the jobs (default: an embedded local[*])")
    add_progress_flag(p)
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from kraftsim.demo import run_demo  # the simulator and scenarios load only when the demo runs
    from kraftsim.sim.node.format import elapsed_text
    from kraftsim.storage.safepath import check_writable

    out = Path(args.out)
    if out.exists():
        if not args.force:
            raise KraftsimError(f"{out} exists (from an earlier run?): pass --force to replace it, or --out elsewhere")
        _clear_earlier_run(out)
    check_writable(out, flag="--out", directory=True)  # (a place nothing can be made in is said first)
    status = StatusLine(show_progress(args))

    def progress(name: str, step: int, ms: int) -> None:
        status(lambda: f"demo: {name}: step {step}, simulated time {elapsed_text(ms)}")

    try:
        run_demo(out, seed=args.seed, spark=not args.no_spark, master=args.master, say=status.say(print),
                 progress=progress if status.enabled else None)
    finally:
        status.clear()
    return 0


def _clear_earlier_run(out: Path) -> None:
    """--force: remove an earlier run's output, and only that. `--out .` or a folder of the
    user's own files was removed whole (the working directory emptied, then an internal error)."""
    from kraftsim.demo import OUTPUT_ENTRIES

    if not out.is_dir():
        raise KraftsimError(f"{out} exists and is not a folder: --out elsewhere")
    others = sorted(p.name for p in out.iterdir() if p.name not in OUTPUT_ENTRIES)
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise KraftsimError(f"{out} holds {shown}, which no demo run writes: --force replaces only an earlier "
                            "run's output; --out elsewhere")
    for name in OUTPUT_ENTRIES:
        target = out / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
