"""`kraftsim conformance run`: compare kraftsim with real Kafka, case by case, release by release.

kraftsim's own command. Prints a table of cases × releases (agree / DIFFER / policy) and
then each difference; `--json` prints one object per case and release instead. Exit code
0 when nothing differs, 1 when a case differs, 2 when Kafka cannot be run here (no Java
17+, no Maven, a release Maven Central does not serve). The logic lives in
kraftsim.conformance.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys

from kraftsim import jsoninput
from kraftsim.conformance.cases import AGREE, DIFFER, POLICY, Outcome
from kraftsim.conformance.dist import KafkaUnavailable, default_releases, resolve_release
from kraftsim.conformance.report import detail_lines, json_line, markdown_row, table_lines, totals_line
from kraftsim.conformance.roll import run_roll
from kraftsim.conformance.run import run_release
from kraftsim.regular_file import open_input


#: The most `conformance table` reads: every case of every release, as `conformance run --json`
#: prints them, is a few megabytes.
MAX_TABLE_BYTES = 64 * 1024 * 1024
RESULTS = (AGREE, POLICY, DIFFER)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("conformance", help="compare kraftsim with real Kafka releases, case by case")
    cmds = group.add_subparsers(dest="conformance_command", metavar="SUBCOMMAND")
    cmds.required = True
    r = cmds.add_parser("run", help="run the cases on each release; print cases × releases (agree / differ / policy)")
    r.add_argument("--release", action="append", default=[], metavar="V",
                   help="a Kafka version or line (repeatable; default: "
                        + ", ".join(x.version for x in default_releases()) + ")")
    r.add_argument("--case", action="append", default=[], metavar="PATTERN",
                   help="only cases whose names match this shell pattern (repeatable), e.g. 'storage-format/*'; "
                        "'roll/*' is the rolling upgrade through the releases given (two or more)")
    r.add_argument("--json", action="store_true",
                   help='one JSON object per case and release: {"case", "release", "result", "detail"}')
    r.add_argument("--summary", action="store_true", help="fold the table into case families with counts")
    r.add_argument("--policies", action="store_true", help="also print each policy note under the table")
    r.set_defaults(run=_run)

    t = cmds.add_parser("table", help="print the table of a saved `conformance run --json` output")
    t.add_argument("file", metavar="FILE", help="JSON lines from `kraftsim conformance run --json` ('-': stdin)")
    t.add_argument("--summary", action="store_true", help="fold the table into case families with counts")
    t.add_argument("--markdown", action="store_true", help="a Markdown table (for the README)")
    t.set_defaults(run=_table)


def _run(args: argparse.Namespace) -> int:
    """(SIGTERM unwinds like Ctrl-C in every command, kraftsim.cli.main.Terminated: every live
    Kafka node is stopped on the way out.)"""
    try:
        releases = [resolve_release(v) for v in args.release] or default_releases()
        outcomes = []
        log = lambda line: print(line, file=sys.stderr)  # noqa: E731
        runs = [run_release(release, args.case, log=log) for release in releases]
        if len(releases) > 1 and (not args.case or any(fnmatch.fnmatchcase("roll/x", p.split("/")[0] + "/x")
                                                        for p in args.case)):
            ordered = sorted(releases, key=lambda r: tuple(int(x) for x in r.version.split(".")))
            runs.append(run_roll(ordered, log=log))
        for run in runs:
            for outcome in run:
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


def _table(args: argparse.Namespace) -> int:
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read(MAX_TABLE_BYTES + 1)
        else:
            # (a FIFO is read as the pipe it is, as '-' is; one nobody writes to is refused after a while)
            with open_input(args.file) as f:
                data = f.read(MAX_TABLE_BYTES + 1)
    except OSError as e:
        print(f"kraftsim: error: {args.file}: cannot be read: {e.strerror or e}", file=sys.stderr)
        return 2
    if len(data) > MAX_TABLE_BYTES:
        print(f"kraftsim: error: {args.file}: more than the {MAX_TABLE_BYTES:,} bytes of outcomes kraftsim reads",
              file=sys.stderr)
        return 2
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        print(f"kraftsim: error: {args.file}: expected UTF-8 text (byte {e.start} is not)", file=sys.stderr)
        return 2
    outcomes = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = jsoninput.loads(line)  # (nesting too deep: a ValueError, not an internal error)
            outcome = Outcome(obj["case"], obj["release"], obj["result"], obj.get("detail", ""))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            print(f"kraftsim: error: {args.file}: line {n}: expected a conformance JSON object ({e})", file=sys.stderr)
            return 2
        if not all(isinstance(v, str) for v in (outcome.case, outcome.release, outcome.result, outcome.detail)) \
                or outcome.result not in RESULTS:
            print(f"kraftsim: error: {args.file}: line {n}: expected text for case, release and detail, and a "
                  f"result of {', '.join(RESULTS)}", file=sys.stderr)
            return 2
        outcomes.append(outcome)
    releases = list(dict.fromkeys(o.release for o in outcomes))
    lines = table_lines(outcomes, releases, summary=args.summary)
    if args.markdown:
        lines = [markdown_row(ln) for ln in lines]
    for line in lines:
        print(line)
    print(totals_line(outcomes))
    return 0
