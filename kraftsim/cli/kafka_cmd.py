"""`kraftsim kafka`: real Kafka releases from Maven Central, for comparing kraftsim with them.

kraftsim's own command. `fetch` downloads a release's jars with the machine's Maven into
the cache (`$KRAFTSIM_KAFKA_CACHE`, default `~/.cache/kraftsim/kafka/`); `releases` lists
the releases the conformance suite knows and which are cached. The logic lives in
kraftsim.conformance.dist.
"""

from __future__ import annotations

import argparse
import json
import sys

from kraftsim.conformance.dist import KafkaUnavailable, cache_root, cached_jars, fetch, known_releases, resolve_release


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("kafka", help="fetch real Kafka releases (jars from Maven Central) to compare with")
    cmds = group.add_subparsers(dest="kafka_command", metavar="SUBCOMMAND")
    cmds.required = True

    f = cmds.add_parser("fetch", help="download a release's jars with Maven into the cache (reused across runs)")
    f.add_argument("versions", nargs="+", metavar="VERSION",
                   help="a Kafka version (4.3.1) or line (4.3: the release the suite uses for it)")
    f.add_argument("--json", action="store_true", help="one JSON object per fetched release")
    f.set_defaults(run=_run_fetch)

    r = cmds.add_parser("releases", help="the releases the conformance suite knows, and which are cached")
    r.add_argument("--json", action="store_true", help="print the releases as one JSON object")
    r.set_defaults(run=_run_releases)


def _run_fetch(args: argparse.Namespace) -> int:
    """Exit 2 (not 1) when a release cannot be fetched: nothing was checked, the input or machine is at fault."""
    try:
        for name in args.versions:
            release = resolve_release(name)
            dist = fetch(release, log=lambda line: print(line, file=sys.stderr))
            if args.json:
                print(json.dumps({"version": release.version, "jars": len(dist.jars), "home": str(dist.home),
                                  "java": dist.java.version}, sort_keys=True))
            else:
                print(f"Kafka {release.version}: {len(dist.jars)} jars in {dist.home / 'jars'} (Java {dist.java.version})")
    except KafkaUnavailable as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return 2
    return 0


def _run_releases(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps({"cache": str(cache_root()), "releases": [
            {"version": r.version, "line": r.line, "default": r.default, "cached": bool(cached_jars(r)),
             "shell": r.shell} for r in known_releases()]}, sort_keys=True))
        return 0
    print(f"cache: {cache_root()}")
    for r in known_releases():
        state = "cached" if cached_jars(r) else "not fetched"
        notes = [] if r.shell else ["no kafka-shell on Maven Central"]
        print(f"{r.version:<8} line {r.line:<5} {'default' if r.default else '       '}  {state}"
              + (f"  ({'; '.join(notes)})" if notes else ""))
    return 0
