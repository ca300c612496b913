"""`kraftsim cluster import SOURCE... DIR`: a simulated cluster that starts from a real
cluster's metadata (kraftsim.sim.importing does the work; this is the command line)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kraftsim.errors import KraftsimError
from kraftsim.sim.importing import (
    ImportRefused,
    import_cluster,
    parse_release_overrides,
)

DESCRIPTION = """\
Make a simulated cluster in DIR whose nodes start from a real cluster's metadata, at the
offset where the source ends. SOURCE is a __cluster_metadata-0 directory, a node's log
directory holding one, a .checkpoint snapshot, or several nodes' log directories (each
with its meta.properties). Node ids, roles, listeners, racks, directory ids, voters and the
whole image come from the metadata; a voter that is also a registered broker is a combined
node; each node's release is inferred from what its latest registration advertises. The
source is only read. Then run scenarios or cluster commands on DIR."""


def add_parser(cmds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = cmds.add_parser("import", help="a simulated cluster that starts from a real cluster's metadata",
                        usage="kraftsim cluster import [options] SOURCE [SOURCE ...] DIR",
                        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="one or more sources, then the new cluster directory (must not exist, or be empty)")
    p.add_argument("--voters", metavar="ID,ID,...", help="the voter set, instead of what the metadata names")
    p.add_argument("--release", action="append", default=[], metavar="R|ID=R",
                   help="the release every node (R) or one node (ID=R) runs, instead of the inferred one (repeatable)")
    p.add_argument("--up-to-damage", action="store_true",
                   help="import a damaged log up to the first damage (the result is labelled partial)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seeds the simulation (default 0)")
    p.add_argument("--policy", choices=("kafka", "kip-778"), default="kafka",
                   help="kafka (default) or kip-778 (lossy metadata.version downgrades allowed)")
    p.add_argument("--catalog", metavar="FILE", help="a catalog file adding hypothetical versions or releases")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(run=_run_import)


def _voters(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ImportRefused(f"--voters: expected comma-separated node ids, got {text!r}") from None
    if not ids:
        raise ImportRefused("--voters: no node id given")
    return ids


def _run_import(args: argparse.Namespace) -> int:
    try:
        if len(args.paths) < 2:
            raise ImportRefused("expected at least one SOURCE and the cluster directory DIR")
        *sources, directory = args.paths
        everyone, per_node = parse_release_overrides(args.release)
        result = import_cluster(sources, directory, voters=_voters(args.voters), release=everyone,
                                release_overrides=per_node, up_to_damage=args.up_to_damage, seed=args.seed,
                                policy=args.policy,
                                catalog_path=str(Path(args.catalog).resolve()) if args.catalog else None)
    except ImportRefused as e:
        print(f"kraftsim cluster import: {e}", file=sys.stderr)
        return e.exit_code
    except (KraftsimError, OSError) as e:
        print(f"kraftsim cluster import: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.summary(), sort_keys=True))
    else:
        print("\n".join(result.lines()))
    return 0


__all__ = ["add_parser"]
