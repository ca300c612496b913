"""Entry point of the `kraftsim` command.

Each command group lives in its own module exposing `register(subparsers)`; this module
only assembles them and turns input errors into one clear line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from kraftsim import __version__
from kraftsim.errors import KraftsimError

# Command modules, in the order their groups appear in --help.
COMMAND_MODULES = (
    "kraftsim.cli.demo_cmd",
    "kraftsim.cli.export_cmd",
    "kraftsim.cli.log_cmd",
    "kraftsim.cli.storage_cmd",
    "kraftsim.cli.replay_cmd",
    "kraftsim.cli.snapshot_cmd",
    "kraftsim.cli.downgrade_cmd",
    "kraftsim.cli.cluster_cmd",
    "kraftsim.cli.features_cmd",
    "kraftsim.cli.spark_cmd",
    "kraftsim.cli.scenario_cmd",
    "kraftsim.cli.topics_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraftsim",
        description="Simulate, read and check Apache Kafka's KRaft metadata: logs, snapshots, versions and features.",
    )
    parser.add_argument("--version", action="version", version=f"kraftsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except KraftsimError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `kraftsim log dump ... | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("kraftsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
