"""Helpers for the state-machine tests: running a machine class under fixed settings,
planting bugs only inside a test, and replaying a written scenario.

Importing this module loads every kraftsim module. Hypothesis also draws values from the
constants in the source of the project's modules that are loaded in the process (since
6.131), so a derandomized run's examples depend on which modules earlier tests imported:
the same machine explored 38 invalid cases alone and 32 or 40 after other tests. With all of
kraftsim loaded before any test runs, a machine test explores the same examples alone as
in the whole suite, and a failure in CI replays with the one test file."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import pkgutil
import tomllib
from pathlib import Path
from typing import Any, Iterator

import msgspec
from hypothesis import HealthCheck, Phase, settings

import kraftsim
from kraftsim.testing import config as kraftsim_config, machine as machine_module
from kraftsim.versions import catalog as catalog_module, loader
from kraftsim.versions.gates import GateTable


def load_every_kraftsim_module() -> None:
    """Import every module of the kraftsim package (not `__main__`, which runs the command)."""
    for info in pkgutil.walk_packages(kraftsim.__path__, "kraftsim."):
        if not info.name.endswith(".__main__"):
            importlib.import_module(info.name)


load_every_kraftsim_module()


def fixed_settings(max_examples: int, steps: int) -> settings:
    """Deterministic runs (derandomize) with generation and shrinking only, no database."""
    return settings(max_examples=max_examples, stateful_step_count=steps, deadline=None, database=None,
                    derandomize=True, report_multiple_bugs=False, phases=(Phase.generate, Phase.shrink),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def run_machine(cls: type, max_examples: int, steps: int) -> None:
    """As the machine's TestCase runs it (a spent shrink budget raises the failure it cut short),
    but with no shrink budget unless the class sets one: the wall clock must not decide what a
    test's shrunk counterexample is."""
    previous = kraftsim_config.option_shrink_budget
    kraftsim_config.option_shrink_budget = float("inf")
    try:
        machine_module.run_as_test(cls, settings=fixed_settings(max_examples, steps))
    finally:
        kraftsim_config.option_shrink_budget = previous


def repro_path(error: BaseException) -> Path:
    """The scenario file a failure names in its note."""
    notes = [n for n in getattr(error, "__notes__", []) if "written as a scenario" in n]
    assert notes, f"the failure names no scenario file: {error!r}"
    return Path(notes[-1].rsplit(": ", 1)[1])


def steps_of(path: Path) -> list[dict[str, Any]]:
    return tomllib.loads(path.read_text("utf-8")).get("step", [])


def run_cli_json(path: Path) -> tuple[int, dict[str, Any]]:
    """`kraftsim scenario run --json PATH` in this process (planted bugs stay in effect)."""
    from kraftsim.cli.main import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["scenario", "run", "--json", str(path)])
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    assert len(lines) == 1, out.getvalue()
    return code, json.loads(lines[0])


def clear_catalog_caches() -> None:
    catalog_module.default_catalog.cache_clear()
    machine_module._catalog.cache_clear()


@contextlib.contextmanager
def planted_lossless(level: int) -> Iterator[None]:
    """The shipped catalog with metadata.version `level` claiming no metadata change.

    The catalog loader refuses such a file (a version that adds record versions must say
    metadata_changed = true), so its check is switched off for `level` as well: this is
    the catalog a careless proposal would be if nothing checked it statically."""
    original_fragments = loader.shipped_fragments
    original_additions = GateTable.additions_at

    def fragments():  # type: ignore[no-untyped-def]
        out = []
        for source, frag, folder in original_fragments():
            mvs = [msgspec.structs.replace(e, metadata_changed=False) if e.level == level else e
                   for e in frag.metadata_versions]
            out.append((source, msgspec.structs.replace(frag, metadata_versions=mvs), folder))
        return out

    loader.shipped_fragments = fragments  # type: ignore[assignment]
    GateTable.additions_at = lambda self, lv: [] if lv == level else original_additions(self, lv)  # type: ignore[method-assign]
    clear_catalog_caches()
    try:
        yield
    finally:
        loader.shipped_fragments = original_fragments  # type: ignore[assignment]
        GateTable.additions_at = original_additions  # type: ignore[method-assign]
        clear_catalog_caches()


@contextlib.contextmanager
def skipped_broker_quorum_check() -> Iterator[None]:
    """A controller policy that skips the brokers in UpdateFeatures' quorum check."""
    from kraftsim.controller import quorum_features
    original = quorum_features.brokers_reason_not_supported
    quorum_features.brokers_reason_not_supported = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        quorum_features.brokers_reason_not_supported = original  # type: ignore[assignment]
