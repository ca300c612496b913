"""`kraftsim demo`: the main job on its default settings (see kraftsim/demo.py)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from kraftsim.demo import run_demo
from kraftsim.errors import KraftsimError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the whole chain: operate a simulated cluster, downgrade it, verify its logs, "
                                    "then the downgrade-matrix and snapshot-cost jobs on Spark")
    p.add_argument("--out", default="kraftsim-demo", metavar="DIR", help="where to write everything (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="replace DIR if an earlier run left it")
    p.add_argument("--seed", type=int, default=0, help="seeds every id and placement of the cluster (default: %(default)s)")
    p.add_argument("--topics", type=int, default=6, help="topics to create (default: %(default)s)")
    p.add_argument("--partitions", type=int, default=6, help="partitions per topic (default: %(default)s)")
    p.add_argument("--no-spark", action="store_true", help="stop after verifying the cluster's logs")
    p.add_argument("--master", metavar="URL", help="a Spark master for the jobs (default: an embedded local[*])")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists():
        if not args.force:
            raise KraftsimError(f"{out} exists (from an earlier run?): pass --force to replace it, or --out elsewhere")
        shutil.rmtree(out)
    if args.topics < 0 or args.partitions < 1:
        raise KraftsimError("--topics must be 0 or more and --partitions 1 or more")
    run_demo(out, seed=args.seed, topics=args.topics, partitions=args.partitions, spark=not args.no_spark,
             master=args.master)
    return 0
