"""`kraftsim conformance run`: compare kraftsim with real Kafka, case by case, release by release.

kraftsim's own command. Prints a table of cases × releases (agree / DIFFER / policy) and
then each difference; `--json` prints one object per case and release instead. Exit code
0 when nothing differs, 1 when a case differs, 2 when Kafka cannot be run here (no Java
17+, no Maven, a release Maven Central does not serve). The logic lives in
kraftsim.conformance.
"""

from __future__ import annotations

import argparse
import sys

from kraftsim.conformance.cases import DIFFER
from kraftsim.conformance.dist import KafkaUnavailable, default_releases, resolve_release
from kraftsim.conformance.report import detail_lines, json_line, table_lines, totals_line
from kraftsim.conformance.run import run_release


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("conformance", help="compare kraftsim with real Kafka releases, case by case")
    cmds = group.add_subparsers(dest="conformance_command", metavar="SUBCOMMAND")
    cmds.required = True
    r = cmds.add_parser("run", help="run the cases on each release; print cases × releases (agree / differ / policy)")
    r.add_argument("--release", action="append", default=[], metavar="V",
                   help="a Kafka version or line (repeatable; default: "
                        + ", ".join(x.version for x in default_releases()) + ")")
    r.add_argument("--case", action="append", default=[], metavar="PATTERN",
                   help="only cases whose names match this shell pattern (repeatable), e.g. 'storage-format/*'")
    r.add_argument("--json", action="store_true",
                   help='one JSON object per case and release: {"case", "release", "result", "detail"}')
    r.add_argument("--summary", action="store_true", help="fold the table into case families with counts")
    r.add_argument("--policies", action="store_true", help="also print each policy note under the table")
    r.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        releases = [resolve_release(v) for v in args.release] or default_releases()
        outcomes = []
        for release in releases:
            for outcome in run_release(release, args.case, log=lambda line: print(line, file=sys.stderr)):
                outcomes.append(outcome)
                if args.json:
                    print(json_line(outcome), flush=True)
    except KafkaUnavailable as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return 2
    if not args.json:
        for line in table_lines(outcomes, [r.version for r in releases], summary=args.summary):
            print(line)
        print(totals_line(outcomes))
        details = detail_lines(outcomes, policies=args.policies)
        if details:
            print()
            for line in details:
                print(line)
    return 1 if any(o.result == DIFFER for o in outcomes) else 0
