"""kafka-metadata-shell's image of a snapshot against the image `kraftsim replay` predicts.

Kafka's own loader reads each snapshot kraftsim writes (of a simulated cluster's log: as
is, lossless-downgraded and KIP-778 lossy) and the image it serves is compared with
kraftsim's: the finalized metadata.version and feature levels, and the ids of brokers and
controllers and the topic names (`ls` of their directories; `find /image` fails on 4.0's
shell). Releases whose metadata shell
Maven Central does not serve (4.4.0) have no such cases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from kraftsim.conformance.cases import shell_lines
from kraftsim.conformance.cases.base import Case, ReleaseContext
from kraftsim.conformance.cases.dump_log import _sim_cluster, _snapshots
from kraftsim.conformance.compare import unified
from kraftsim.conformance.tools import ToolRun

GROUP = "metadata-shell"
SESSION_TIMEOUT_S = 45
_FINALIZED = "/image/features/finalized_"


_LISTS = (("broker", "/image/cluster/brokers"), ("controller", "/image/cluster/controllers"),
          ("topic", "/image/topics/byName"))
#: Before 3.7 the shell lists the brokers' ids right under /image/cluster, and no controller
#: registers (KIP-919).
_LISTS_BEFORE_3_7 = (("broker", "/image/cluster"), ("topic", "/image/topics/byName"))

Lists = tuple[tuple[str, str], ...]


def _lists(ctx: ReleaseContext) -> Lists:
    return _LISTS if ctx.dist.release.line_tuple >= (3, 7) else _LISTS_BEFORE_3_7


def _kafka_image(answers: list[str], names: list[str], lists: Lists = _LISTS) -> list[str]:
    """Kafka's answers (ls of the features, the `lists`, then cat of metadataVersion and of
    each feature in `names`) as the lines _kraftsim_image makes."""
    # 4.x prints an Optional ("Optional[4.2-IV1]"), 3.x the version alone.
    shown = answers[len(lists) + 1].strip()
    lines = [f"metadata.version={shown[len('Optional['):-1] if shown.startswith('Optional[') else shown}"]
    lines += [f"{name}={answer.strip()}" for name, answer in zip(names, answers[len(lists) + 2:])]
    for (what, _), answer in zip(lists, answers[1:]):
        lines += sorted(f"{what} {item.strip()}" for item in answer.splitlines() if item.strip())
    return lines


def _kraftsim_image(summary: dict[str, Any]) -> list[str]:
    features = dict(summary["features"])
    mv = features.pop("metadata.version", None)
    lines = [f"metadata.version={mv['version']}" if mv else "metadata.version=Optional.empty"]
    lines += [f"{name}={level}" for name, level in sorted(features.items())]
    lines += sorted(f"broker {b['id']}" for b in summary["brokers"])
    lines += sorted(f"controller {c['id']}" for c in summary["controllers"])
    lines += sorted(f"topic {t['name']}" for t in summary["topics"]["list"])
    return lines


def _answers(run: ToolRun, count: int) -> list[str]:
    """The shell's answer to each of `count` commands read from stdin: the text between prompts."""
    text = run.stdout
    start = text.find(">> ")
    parts = text[start:].split(">> ")[1:] if start >= 0 else []
    return [p.rstrip("\n") for p in parts[:count]] + [""] * (count - len(parts[:count]))


def _session(ctx: ReleaseContext, path: Path, commands: list[str]) -> ToolRun:
    """The shell on one snapshot, commands on stdin (asked again when it hangs: shell_lines.kafka_shell)."""
    stdin = "\n".join([*commands, "exit"]) + "\n"
    return shell_lines.kafka_shell(ctx, ["--snapshot", str(path)], stdin, timeout=SESSION_TIMEOUT_S)


def _case(ctx: ReleaseContext, label: str, path: Path) -> Case:
    """One interactive shell session on the snapshot (commands on stdin): `find /image`, `cat` of
    metadataVersion and of every finalized feature kraftsim's image has (a feature only
    Kafka has shows up in the finalized-features comparison)."""

    def check(_: list[ToolRun]) -> list[str]:
        replay = ctx.kraftsim(["replay", "--json", "--no-verify", "--release", ctx.line, str(path)])
        try:
            summary = json.loads(replay.stdout)["results"][0]["summary"]
        except (ValueError, KeyError, IndexError):
            return [f"kraftsim replay --json {path.name}: exit {replay.code}: {replay.stderr.strip()[:300]}"]
        names = sorted(n for n in summary["features"] if n != "metadata.version")
        lists = _lists(ctx)
        commands = ["ls /image/features", *(f"ls {path}" for _, path in lists),
                    "cat /image/features/metadataVersion", *(f"cat {_FINALIZED}{n}" for n in names)]
        run = _session(ctx, path, commands)
        answers = _answers(run, len(commands))
        diffs = [] if run.code == 0 else [f"kafka-metadata-shell --snapshot {path.name}: exit {run.code}"]
        kafka_lines = _kafka_image(answers, names, lists)
        prefix = _FINALIZED.rsplit("/", 1)[1]
        finalized = sorted(ln.strip()[len(prefix):] for ln in answers[0].splitlines() if ln.strip().startswith(prefix))
        diffs += unified(finalized, names, f"{path.name} finalized features")
        return diffs + unified(kafka_lines, _kraftsim_image(summary), f"{path.name} image")

    return Case(f"{GROUP}/{label}", (), check)


def cases(ctx: ReleaseContext) -> Iterable[Case]:
    if not ctx.dist.release.shell:
        return
    missing = ctx.missing_line()
    if missing:
        yield Case(f"{GROUP}/kraftsim snapshot", (), lambda _: [f"kraftsim cannot act as Kafka {ctx.line}: {missing}"])
        return
    metadata_dir = _sim_cluster(ctx)
    if metadata_dir is None:
        return
    for label, path in _snapshots(ctx, metadata_dir):
        yield _case(ctx, f"kraftsim {label}", path)
    yield from shell_lines.cases(ctx)
