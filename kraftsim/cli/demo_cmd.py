"""`kraftsim demo`: the main job on its default settings (see kraftsim/demo.py)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from kraftsim.cli.common import add_catalog_options, catalog_from_args
from kraftsim.demo import run_demo
from kraftsim.errors import KraftsimError
from kraftsim.image.synthetic import ClusterShape


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the whole chain on a synthetic cluster: format, snapshot, verify, downgrade what-ifs")
    p.add_argument("--out", default="kraftsim-demo", metavar="DIR", help="where to write the files (default: %(default)s)")
    p.add_argument("--force", action="store_true", help="replace DIR if an earlier run left it")
    p.add_argument("--seed", type=int, default=0, help="the seed of every id and placement (default: %(default)s)")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--partitions", type=int, default=3, help="partitions per topic")
    p.add_argument("--replication-factor", type=int, default=3)
    add_catalog_options(p)
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists():
        if not args.force:
            raise KraftsimError(f"{out} exists (from an earlier run?): pass --force to replace it, or --out elsewhere")
        shutil.rmtree(out)
    try:
        shape = ClusterShape(brokers=args.brokers, topics=args.topics, partitions=args.partitions,
                             replication_factor=args.replication_factor)
    except ValueError as e:
        raise KraftsimError(str(e)) from None
    run_demo(out, catalog_from_args(args), shape, seed=args.seed)
    return 0
