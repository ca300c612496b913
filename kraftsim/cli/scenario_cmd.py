"""`kraftsim scenario run|check|list|new`: what-if scenarios (contracts 4 and 5).

kraftsim's own command. Exit status: 0 every scenario passed (or every file is valid), 1 a
scenario failed, 2 a file is not a valid scenario (nothing runs then) or a usage error.
A state machine's counterexample (`[recorded_failure]`) counts as passed when the simulator
reaches the recorded state again; it prints REPRODUCES and the command that re-checks the
machine's own assertion (kraftsim.scenario.recorded_failure says why).
The logic lives in kraftsim.scenario; this module reads arguments and prints.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from kraftsim.cli.progress import StatusLine, add_progress_flag, show_progress
from kraftsim.cli.style import paint_prefix
from kraftsim.errors import KraftsimError, UsageError
from kraftsim.scenario import Scenario, ScenarioInvalid, load_scenario
from kraftsim.scenario.ops import Step
from kraftsim.scenario.recorded_failure import report_lines, result_json as recorded_json
from kraftsim.scenario.results import StepResult, result_json
from kraftsim.scenario.suite import SUITE_DIR, scenario_files, slow_skipped_note, template
from kraftsim.scenario.text import seconds, step_lines, summary_lines
from kraftsim.storage import check_output, check_writable, safe_file_name
from kraftsim.storage.safepath import check_output_file
from kraftsim.textsafe import INVISIBLE

EXIT_FAILED, EXIT_INVALID = 1, 2
#: The verdict words painted on a terminal.
VERDICTS = {"PASS ": "green", "FAIL ": "red", "REPRODUCES ": "yellow"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("scenario", help="run what-if scenarios: a cluster, steps and expected outcomes in a TOML file")
    cmds = group.add_subparsers(dest="scenario_command", metavar="SUBCOMMAND")
    cmds.required = True

    run = cmds.add_parser("run", help="run scenario files (or every *.toml in a directory)",
                          description="Exit 0 when every scenario passed, 1 when one failed, 2 when a file is not "
                                      "a valid scenario (then nothing runs). A state machine's counterexample "
                                      "([recorded_failure]) passes as REPRODUCES when the simulator reaches the "
                                      "recorded state; the command printed re-checks the machine's own assertion.")
    run.add_argument("paths", nargs="+", metavar="FILE|DIR|NAME",
                     help="scenario files, directories of them (run in name order), or names of shipped scenarios "
                          "(`kraftsim scenario list`)")
    run.add_argument("--seed", type=int, metavar="N", help="override each file's seed")
    run.add_argument("--json", action="store_true", help="print one JSON object per scenario (contract 5) and nothing else")
    run.add_argument("--html", metavar="REPORT", help="write a self-contained HTML report (with several scenarios, "
                                                      "or when REPORT is a folder: NAME.html in it)")
    run.add_argument("--sweep", metavar="DIR", type=Path,
                     help="with --html: add the plots of this `kraftsim spark sweep` output (outcome rate per "
                          "scenario, time and fenced-time distributions)")
    run.add_argument("--snapshot-cost", metavar="DIR", type=Path,
                     help="with --html: add snapshot bytes against partitions per metadata.version from this "
                          "`kraftsim spark snapshot-cost` output")
    run.add_argument("--keep", metavar="DIR", help="leave the cluster directory here (with several scenarios: "
                                                   "DIR/NAME) for `kraftsim log dump`, `replay`, `cluster status`")
    run.add_argument("--include-slow", action="store_true",
                     help="also run a directory's scenarios marked `slow = true` (the production-scale what-if: "
                          "minutes and tens of GB written; left out by default, unless named on their own)")
    add_progress_flag(run)
    run.set_defaults(run=_run)

    check = cmds.add_parser("check", help="validate scenario files without running them")
    check.add_argument("paths", nargs="+", metavar="FILE|DIR|NAME",
                       help="scenario files, directories of them, or names of shipped scenarios")
    check.set_defaults(run=_check)

    lst = cmds.add_parser("list", help="the shipped scenarios: name, file and the question each answers")
    lst.add_argument("--dir", metavar="DIR", help=f"list this folder instead (default: {SUITE_DIR.name}/ of kraftsim)")
    lst.set_defaults(run=_list)

    new = cmds.add_parser("new", help="write a commented template scenario NAME.toml")
    new.add_argument("name", metavar="NAME", help="the new scenario's name (NAME.toml is written, a NAME ending in .toml "
                                                  "as it is; an existing file is not overwritten)")
    new.add_argument("--output", "-o", metavar="FILE", help="where to write it (default: NAME.toml)")
    new.set_defaults(run=_new)


def _load_all(paths: list[str], *, include_slow: bool = True) -> list[Scenario] | None:
    """Every file checked before anything runs; None (after printing why) if one is invalid.
    Without `include_slow`, a directory's slow scenarios are left out (said on stderr)."""
    try:
        files = scenario_files([Path(p) for p in paths], include_slow=include_slow,
                               on_skip=lambda f: print(slow_skipped_note(f), file=sys.stderr))
    except ScenarioInvalid as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return None
    scenarios, bad = [], 0
    if not files:
        print(f"kraftsim: error: no scenario files in {', '.join(paths)}", file=sys.stderr)
        return None
    for f in files:
        try:
            scenarios.append(load_scenario(f))
        except ScenarioInvalid as e:
            print(f"kraftsim: error: {e}", file=sys.stderr)
            bad += 1
    names = [s.name for s in scenarios]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        print(f"kraftsim: error: two files name the scenario {dupes[0]!r}", file=sys.stderr)
        bad += 1
    return None if bad else scenarios


def _all_creatable(scenarios: list[Scenario]) -> bool:
    """Whether every scenario's cluster can be created (formatted in a scratch directory), said
    for each that cannot: a run checks so before anything is printed or run."""
    from kraftsim.scenario.runner import check_creatable

    bad = 0
    for scenario in scenarios:
        try:
            check_creatable(scenario)
        except ScenarioInvalid as e:
            print(f"kraftsim: error: {e}", file=sys.stderr)
            bad += 1
    return not bad


def _target(base: str | None, scenario: Scenario, many: bool, suffix: str = "") -> Path | None:
    if base is None:
        return None
    return _target_in(base, scenario, many, suffix)


def _target_in(base: str, scenario: Scenario, many: bool, suffix: str = "") -> Path:
    """`base` itself, or with many scenarios the scenario's file in it (a scenario's name never
    leads outside `base`: safe_file_name)."""
    return Path(base) / f"{safe_file_name(scenario.name)}{suffix}" if many else Path(base)


def _run(args: argparse.Namespace) -> int:
    from kraftsim.scenario.runner import run_scenario  # the simulator loads only when something runs
    from kraftsim.sim.node.format import new_cluster_directory_problem

    scenarios = _load_all(args.paths, include_slow=args.include_slow)
    if scenarios is None:
        return EXIT_INVALID
    many = len(scenarios) > 1
    # A folder that gains NAME.html files: for several scenarios, and for one when REPORT is a
    # folder already (as `cp` puts a file into a folder).
    html_folder = bool(args.html) and (many or Path(args.html).is_dir())
    try:  # where the results go is checked before anything runs
        if html_folder:
            check_writable(args.html, flag="--html", directory=True)
        elif args.html:
            check_output(args.html, [s.path for s in scenarios], flag="--html")
            if Path(args.html).exists() and not Path(args.html).is_file():
                raise UsageError(f"--html {args.html}: not a regular file: name an HTML file to write, or a folder "
                                 "to write NAME.html in")
        if args.keep:
            check_writable(args.keep, flag="--keep", directory=True)
    except UsageError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    for scenario in scenarios:
        keep = _target(args.keep, scenario, many)
        if keep is not None and (problem := new_cluster_directory_problem(keep)) is not None:
            print(f"kraftsim: error: --keep {problem}", file=sys.stderr)
            return EXIT_INVALID
    if not _all_creatable(scenarios):
        return EXIT_INVALID
    if (args.sweep or args.snapshot_cost) and not args.html:
        print("kraftsim: error: --sweep and --snapshot-cost add plots to the HTML report: give --html REPORT too",
              file=sys.stderr)
        return EXIT_INVALID
    try:  # a --sweep or --snapshot-cost folder that is not one is refused before anything runs
        sections = {s.name: _report_sections(args, s.name) for s in scenarios} if args.html else {}
    except KraftsimError as e:
        print(f"kraftsim: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    if html_folder:
        Path(args.html).mkdir(parents=True, exist_ok=True)
    failed = 0
    for scenario in scenarios:
        steps = scenario.steps
        if not args.json:
            seed = scenario.seed if args.seed is None else args.seed
            print(f"scenario {scenario.name} (seed {seed}): {scenario.path}")
            if scenario.header.question:
                print(f"  question: {scenario.header.question}")

        status = StatusLine(show_progress(args))

        def show(res: StepResult, steps: list[Step] = steps) -> None:
            status.clear()
            if not args.json:
                print("\n".join(step_lines(steps[res.index - 1], res)), flush=True)

        def progress(index: int, ms: int, name: str = scenario.name, steps: list[Step] = steps) -> None:
            status(lambda: f"scenario {name}: step {index}/{len(steps)} ({steps[index - 1].op}), "
                           f"simulated time {seconds(ms)}" if index else f"scenario {name}: starting the cluster")

        try:
            outcome = run_scenario(scenario, seed=args.seed, keep=_target(args.keep, scenario, many), on_step=show,
                                   on_progress=progress if status.enabled else None)
        except ScenarioInvalid as e:
            status.clear()
            print(f"kraftsim: error: {e}", file=sys.stderr)
            return EXIT_INVALID
        finally:  # also before main reports an error raised on the way
            status.clear()
        result = outcome.result
        if args.json and scenario.recorded_failure is not None:
            print(recorded_json(result, scenario.recorded_failure), flush=True)
        elif args.json:
            print(result_json(result), flush=True)
        else:
            lines = summary_lines(result)
            if scenario.recorded_failure is not None:  # its verdict says what the file reproduces
                lines = lines[:-1] + report_lines(scenario.recorded_failure, scenario.path, result)
            print("\n".join(paint_prefix(line, VERDICTS) for line in lines), flush=True)
        if args.html:
            from kraftsim.scenario.html_report import write_report
            report = _target_in(args.html, scenario, html_folder, ".html")
            write_report(outcome, report, sections[scenario.name])
            if not args.json:
                print(f"  report: {report}")
        failed += not result.passed
    return EXIT_FAILED if failed else 0


def _report_sections(args: argparse.Namespace, name: str) -> list[str]:
    """The --sweep and --snapshot-cost sections of the HTML report (none without them)."""
    if args.sweep is None and args.snapshot_cost is None:
        return []
    from kraftsim.pipeline.sweep.report import report_sections

    return report_sections(name, args.sweep, args.snapshot_cost)


def _check(args: argparse.Namespace) -> int:
    scenarios = _load_all(args.paths)
    if scenarios is None or not _all_creatable(scenarios):
        return EXIT_INVALID
    for s in scenarios:
        print(f"{s.path}: ok: scenario {s.name}, {len(s.steps)} step(s)")
    return 0


def _list(args: argparse.Namespace) -> int:
    folder = Path(args.dir) if args.dir else SUITE_DIR
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such directory")
    scenarios = _load_all([str(folder)])
    if scenarios is None:
        return EXIT_INVALID
    width = max((len(s.name) for s in scenarios), default=0)
    for s in scenarios:  # one line a scenario (name and file), its question indented below
        print(f"{s.name:<{width}}  {s.path}")
        print(f"    {s.header.question or s.description}")
    return 0


def _plain_name(name: str) -> bool:
    """A name fit for NAME.toml and the file's `name = "..."`: no folder (`/`, a leading `.`)
    and no control or direction character (in a file name, and in TOML text, they do harm)."""
    return bool(name) and "/" not in name and not name.startswith(".") and not INVISIBLE.search(name) \
        and "\t" not in name and "\n" not in name  # (the two controls INVISIBLE leaves to text it shows)


def _new(args: argparse.Namespace) -> int:
    name = args.name.strip().removesuffix(".toml")  # (`new x.toml` names scenario x, not x.toml in x.toml.toml)
    if not _plain_name(name):
        print(f"kraftsim: error: NAME: expected a plain scenario name (no '/', no leading '.', no control or direction "
              f"characters), got {args.name!r}", file=sys.stderr)
        return EXIT_INVALID
    path = Path(args.output) if args.output else Path(f"{name}.toml")
    check_output_file(path, [], flag="--output" if args.output else "NAME")  # a missing folder: exit 2, not 70
    if path.exists():
        raise KraftsimError(f"{path}: already exists; not overwritten")
    path.write_text(template(name, str(path)), encoding="utf-8")
    print(f"Wrote {path}: edit it, then `kraftsim scenario run {shlex.quote(str(path))}`.")  # (pasted into a shell)
    return 0
