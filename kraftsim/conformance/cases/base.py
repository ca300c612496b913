"""What every case group shares: a case, its outcome, the release context, the policies."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from kraftsim.conformance.compare import POLICY_MARK
from kraftsim.conformance.dist import KafkaDist, KafkaRelease
from kraftsim.conformance.kraftsim_side import run_kraftsim
from kraftsim.conformance.tools import ToolRun, run_tool
from kraftsim.errors import KraftsimError
from kraftsim.versions import Catalog, load_catalog

AGREE, DIFFER, POLICY = "agree", "differ", "policy"


@dataclass(frozen=True)
class Outcome:
    case: str
    release: str
    result: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"case": self.case, "release": self.release, "result": self.result, "detail": self.detail}


@dataclass(frozen=True)
class Case:
    """One comparison. `kafka` lists the Kafka tool runs it needs that can share a JVM
    (run for all cases of a release in one batch, in order); `check` gets their results,
    does the rest (kraftsim's side, anything live) and returns the differences."""

    name: str
    kafka: tuple[tuple[str, tuple[str, ...]], ...]
    check: Callable[[list[ToolRun]], list[str]]  # the differences; empty when kraftsim agrees


def catalog_release(release: KafkaRelease) -> str:
    """The catalog release kraftsim acts as for a Kafka release: that very release where the
    catalog lists it (4.2.0, not the 4.2 line's newest patch), else its line."""
    try:
        return load_catalog(None).find_release(release.version).name
    except KraftsimError:
        return release.line


@dataclass
class ReleaseContext:
    """One release under test: its jars, a scratch directory, and kraftsim's catalog of its line."""

    dist: KafkaDist
    workdir: Path
    _catalog: Catalog | None = field(default=None, init=False)
    _catalog_error: str | None = field(default=None, init=False)
    _counter: int = field(default=0, init=False)
    memo: dict[str, Any] = field(default_factory=dict, init=False)  # inputs read once per release (cases.inputs)
    cleanups: list[Callable[[], object]] = field(default_factory=list, init=False)  # run when the release is done, whatever happened

    @property
    def version(self) -> str:
        return self.dist.release.version

    @property
    def line(self) -> str:
        """The catalog release kraftsim acts as (catalog_release)."""
        return catalog_release(self.dist.release)

    def catalog(self) -> Catalog | None:
        """kraftsim's catalog seen from this release's line, or None when kraftsim does not know the line."""
        if self._catalog is None and self._catalog_error is None:
            try:
                self._catalog = load_catalog(None, line=self.line)
            except KraftsimError as e:
                self._catalog_error = str(e)
        return self._catalog

    def missing_line(self) -> str | None:
        """Why kraftsim cannot act as this release, or None."""
        self.catalog()
        return self._catalog_error

    def scratch(self, name: str) -> Path:
        """A new, empty directory under the release's work directory."""
        self._counter += 1
        path = self.workdir / f"{self._counter:04d}-{name}"
        path.mkdir(parents=True)
        return path

    def kafka(self, tool: str, args: list[str], **kw: Any) -> ToolRun:
        return run_tool(self.dist, tool, args, **kw)

    def kraftsim(self, argv: list[str]) -> ToolRun:
        return run_kraftsim(argv)


@dataclass(frozen=True)
class Policy:
    """A documented, named difference between kraftsim and Kafka."""

    name: str
    case: str  # fnmatch pattern over case names; "" for a policy the comparisons name themselves
    releases: tuple[str, ...]  # fnmatch patterns over release versions
    match: str  # a substring the differences must contain
    why: str


def load_policies() -> list[Policy]:
    text = resources.files("kraftsim.conformance").joinpath("data/policies.toml").read_text(encoding="utf-8")
    return [Policy(p["name"], p.get("case", ""), tuple(p.get("releases", ["*"])), p.get("match", ""), p["why"])
            for p in tomllib.loads(text).get("policies", [])]


def judge(case: str, release: str, diffs: list[str], policies: list[Policy]) -> Outcome:
    """agree (no differences), policy (only named, documented ones) or differ."""
    named = list(dict.fromkeys(d[len(POLICY_MARK):] for d in diffs if d.startswith(POLICY_MARK)))
    diffs = [d for d in diffs if not d.startswith(POLICY_MARK)]
    if not diffs:
        if not named:
            return Outcome(case, release, AGREE, "")
        why = {p.name: p.why for p in policies}
        return Outcome(case, release, POLICY, "; ".join(f"{n}: {why.get(n, '(undocumented)')}" for n in named))
    detail = "\n".join(diffs)
    for p in policies:
        if not p.case:
            continue
        if fnmatch.fnmatchcase(case, p.case) and any(fnmatch.fnmatchcase(release, r) for r in p.releases) \
                and p.match in detail:
            return Outcome(case, release, POLICY, f"{p.name}: {p.why}")
    return Outcome(case, release, DIFFER, detail)
