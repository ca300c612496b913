"""The pytest plugin (entry point `kraftsim` in the `pytest11` group), for users' projects.

Options:
  --kraftsim-seed N         the simulator's seed for clusters and state machines (default 0)
  --kraftsim-repro-dir DIR  where a failing state machine writes its counterexample as a
                            scenario file (default .kraftsim/repro)
  --kraftsim-shrink-budget S  seconds a state machine may shrink a counterexample (from
                            the first failing example); then the smallest one so far is
                            written, marked cut short (default 60)
  --kraftsim-replay FILE    the state machine that wrote FILE replays its steps (its own
                            rules' checks and invariants) instead of exploring: the
                            recorded assertion fails again until the bug is fixed; other
                            machines' tests are skipped

Fixtures:
  kraftsim_cluster   a factory: `kraftsim_cluster(controllers=3, brokers=3, release="3.9")`
                     makes a Simulation in tmp_path (closed after the test); any keyword
                     of `Simulation.create` is accepted
  kraftsim_served    a factory of clusters served over Kafka's protocol:
                     `kafka = kraftsim_served(controllers=3, brokers=3, release="4.4.0")`
                     gives `kafka.bootstrap_servers`, `kafka.bootstrap_controllers` and the
                     faults `crash/stop/start/partition/heal/roll` (kraftsim.serve's keywords;
                     stopped after the test); real clients connect in tens of milliseconds
  kraftsim_catalog   the shipped catalog (kraftsim.versions.Catalog); call
                     `kraftsim_catalog.with_file(path)` for a hypothetical one

Hypothesis profile:
  deep               thousands of examples and longer runs for state machines:
                     `pytest --hypothesis-profile=deep` (a profile of the same name in
                     your conftest.py replaces it)

A header line names kraftsim's version, the seed and the repro directory.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

from kraftsim.testing import config as kconfig

if TYPE_CHECKING:
    from kraftsim.sim import Simulation
    from kraftsim.wire import ServedKafka

#: `--hypothesis-profile=deep`: registered when the plugin loads, before hypothesis reads the option.
DEEP: dict[str, int | None] = {"max_examples": 2000, "stateful_step_count": 40, "deadline": None}
try:
    from hypothesis import settings as _settings
    _settings.register_profile("deep", parent=None, **DEEP)
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    pass


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kraftsim", "kraftsim simulated clusters and state machines")
    group.addoption("--kraftsim-seed", type=int, default=None, metavar="N",
                    help=f"the simulator's seed (default: $KRAFTSIM_SEED, else {kconfig.DEFAULT_SEED})")
    group.addoption("--kraftsim-repro-dir", default=None, metavar="DIR",
                    help=f"where failing state machines write scenario files (default: {kconfig.DEFAULT_REPRO_DIR})")
    group.addoption("--kraftsim-shrink-budget", type=float, default=None, metavar="S",
                    help="seconds a state machine may shrink a counterexample before the smallest so far is "
                         f"written, marked cut short (default: $KRAFTSIM_SHRINK_BUDGET, else "
                         f"{kconfig.DEFAULT_SHRINK_BUDGET_S:g})")
    group.addoption("--kraftsim-replay", default=None, metavar="FILE",
                    help="replay a state machine's counterexample FILE through the machine that wrote it "
                         "(the same assertion fails again until the bug is fixed); other machines are skipped")


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption("--kraftsim-seed")
    repro = config.getoption("--kraftsim-repro-dir")
    kconfig.option_seed = seed
    kconfig.option_repro_dir = None if repro is None else Path(repro)
    kconfig.option_shrink_budget = config.getoption("--kraftsim-shrink-budget")
    replay = config.getoption("--kraftsim-replay")
    if replay is not None and not Path(replay).is_file():
        raise pytest.UsageError(f"--kraftsim-replay {replay}: no such file")
    kconfig.option_replay = None if replay is None else Path(replay).resolve()


def pytest_unconfigure(config: pytest.Config) -> None:
    kconfig.option_seed = None
    kconfig.option_repro_dir = None
    kconfig.option_shrink_budget = None
    kconfig.option_replay = None


def pytest_report_header(config: pytest.Config) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        v = version("kraftsim")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        v = "source tree"
    return f"kraftsim: {v}, seed {kconfig.seed()}, repro dir {kconfig.repro_dir()}"


class ClusterFactory:
    """Makes simulated clusters in one test's tmp_path; closes them when the test ends."""

    def __init__(self, base: Path):
        self.base = base
        self.made: list[Simulation] = []

    def __call__(self, *, controllers: int = 3, brokers: int = 0, release: str | None = None,
                 name: str | None = None, **kwargs: Any) -> Simulation:
        from kraftsim.sim import Simulation
        from kraftsim.versions import default_catalog
        release = release or default_catalog().releases[-1].name
        kwargs.setdefault("seed", kconfig.seed())
        directory = self.base / (name or f"cluster-{len(self.made)}")
        sim = Simulation.create(directory, controllers=controllers, brokers=brokers, release=release, **kwargs)
        self.made.append(sim)
        return sim

    def close(self) -> None:
        for sim in reversed(self.made):
            sim.close()
        self.made.clear()


def _closing(factory: ClusterFactory | ServedFactory) -> Iterator[Callable[..., object]]:
    """A factory fixture's body: the factory for the test, closed when the test ends."""
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def kraftsim_cluster(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """A factory of simulated clusters (kraftsim.sim.Simulation) in tmp_path."""
    yield from _closing(ClusterFactory(tmp_path))


class ServedFactory:
    """Serves simulated clusters for one test (kraftsim.serve); stops them when the test ends."""

    def __init__(self, base: Path):
        self.base = base
        self._stack = contextlib.ExitStack()
        self.count = 0

    def __call__(self, target: str | Path | None = None, **kwargs: Any) -> ServedKafka:
        from kraftsim.wire import serve
        if target is None:
            kwargs.setdefault("seed", kconfig.seed())
            kwargs.setdefault("directory", self.base / f"served-{self.count}")
        self.count += 1
        return self._stack.enter_context(serve(target, **kwargs))

    def close(self) -> None:
        self._stack.close()


@pytest.fixture
def kraftsim_served(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """A factory of clusters served over Kafka's protocol (kraftsim.serve) in tmp_path."""
    yield from _closing(ServedFactory(tmp_path))


class CatalogFixture:
    """The shipped catalog, with a way to load a hypothetical one."""

    def __init__(self) -> None:
        from kraftsim.versions import default_catalog
        self.catalog = default_catalog()

    def __getattr__(self, name: str) -> object:
        return getattr(self.catalog, name)

    @staticmethod
    def with_file(path: str | Path, line: str | None = None) -> object:
        """The shipped catalog extended by the TOML file at `path` (kraftsim.versions.load_catalog)."""
        from kraftsim.versions import load_catalog
        return load_catalog(path, line=line)


@pytest.fixture
def kraftsim_catalog() -> CatalogFixture:
    """The shipped version catalog (`.with_file(path)` for a hypothetical one)."""
    return CatalogFixture()
