"""`[recorded_failure]`: a state machine's counterexample, as its scenario file records it.

A ClusterStateMachine that finds a broken invariant writes the steps that led there as a
scenario file, with this table naming the check that failed (an invariant, or the rule
that raised), the assertion's text and the machine class. The file's `[expect]` holds the
state that was reached, so the simulator alone replays the steps to that state; the check
that failed is the user's own code, which only the machine can run again
(`ClusterStateMachine.replay(path)`, or `pytest --kraftsim-replay FILE`).

Exit status of `kraftsim scenario run` on such a file: 0 when the simulator reaches the
recorded state again (every step and `[expect]` as recorded, no invariant of the simulator
broken), 1 when it does not. An operator who keeps reproducers next to scenarios runs them
in CI: exit 0 then says "this file still leads where the failure was seen", which is all
the simulator can tell; a 1 says the file went stale (the simulator changed) or the
simulator's own checks fail. Whether the user's assertion still fails is the machine's
question, so the output prints the replay command instead of a bare PASS.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from kraftsim.scenario.errors import ScenarioInvalid
from kraftsim.scenario.language import RecordedFailure
from kraftsim.scenario.results import ScenarioResult

TABLE = "recorded_failure"
#: The pytest option that replays a file through the machine that recorded it.
REPLAY_OPTION = "--kraftsim-replay"

_OBJECT = re.compile(r"<(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+>")
_BOUND = re.compile(r"<bound method ([\w.]+) of [^<>]*>")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def plain(text: str) -> str:
    """`text` without object reprs: `<kraftsim.testing.handle.ClusterHandle object at 0x7f..>`
    becomes `ClusterHandle`, a bound method its name; an address differs from run to run,
    and a reader learns nothing from it. Pytest's "+  where ..." lines under a rewritten
    assert (which show the machine's repr) are left out; the assert line itself stays."""
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("+"))
    text = _OBJECT.sub(r"\1", text)
    text = _BOUND.sub(r"\1", text)
    return _ADDRESS.sub("", text).strip()


def check(recorded: RecordedFailure | None, file: str) -> None:
    """What the types cannot say: one of `invariant` and `rule`, and a "module:Class" machine."""
    if recorded is None:
        return
    if (recorded.invariant is None) == (recorded.rule is None):
        raise ScenarioInvalid(file, f"{TABLE}.invariant", "expected exactly one of `invariant` and `rule`")
    module, _, name = recorded.machine.partition(":")
    if not module or not name:
        raise ScenarioInvalid(file, f"{TABLE}.machine", f"expected \"module:Class\", got {recorded.machine!r}")


def check_name(recorded: RecordedFailure) -> str:
    """"invariant NAME" or "rule NAME": what failed, in words."""
    return f"invariant {recorded.invariant}" if recorded.invariant is not None else f"rule {recorded.rule}"


def replay_command(recorded: RecordedFailure, path: Path) -> str:
    """The command that re-checks the file with the machine that recorded it: pytest on the
    machine's test module, which replays instead of exploring (kraftsim.testing.plugin)."""
    module = recorded.machine.partition(":")[0]
    target = f" {module.replace('.', '/')}.py" if module not in ("__main__", "") else ""
    return f"python -m pytest {REPLAY_OPTION} {path}{target}"


def report_lines(recorded: RecordedFailure, path: Path, result: ScenarioResult) -> list[str]:
    """What `scenario run` prints after the summary of a file with `[recorded_failure]`."""
    first, *rest = recorded.message.splitlines() or [""]
    out = [f"  recorded failure: {check_name(recorded)} of {recorded.machine} failed after the last step: {first}"]
    out += [f"    {line}" for line in rest]
    if recorded.cut_short:
        out.append("  (shrinking was cut short by the time budget: the steps may be more than needed)")
    if result.passed:
        out.append("  the simulator reached the recorded state; the failing check is the machine's own. Re-check it:")
    else:
        out.append("  the simulator did not reach the recorded state (see above). Re-check with the machine:")
    out.append(f"    {replay_command(recorded, path)}")
    verdict = "REPRODUCES" if result.passed else "FAIL"
    out.append(f"{verdict} {result.name}: {check_name(recorded)} recorded as failing")
    return out


def result_json(result: ScenarioResult, recorded: RecordedFailure) -> str:
    """The contract-5 line of a file with `[recorded_failure]`, with that table added as
    `recorded_failure` (what it records, nothing of where it is, so the line stays
    determined by the file and the seed)."""
    doc = msgspec.to_builtins(result)
    doc["recorded_failure"] = msgspec.to_builtins(recorded)
    return msgspec.json.encode(doc).decode("utf-8")

