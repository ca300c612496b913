"""Options and plumbing shared by several commands."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from kraftsim.errors import KraftsimError
from kraftsim.versions import Catalog, load_catalog


def add_catalog_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", metavar="FILE",
                        help="a catalog file adding hypothetical metadata versions, features, releases or record types")
    parser.add_argument("--release", metavar="R",
                        help="act as this Kafka release's tool (defaults, known versions and texts differ by release); "
                             "default: the newest release in the catalog")


def catalog_from_args(args: argparse.Namespace) -> Catalog:
    return load_catalog(getattr(args, "catalog", None), line=getattr(args, "release", None))


def kafka_tool(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command that mirrors a Kafka tool: its failures print Kafka's text alone, exit 1."""

    def wrapped(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except KraftsimError as e:
            print(str(e), file=sys.stderr)
            return 1

    return wrapped
