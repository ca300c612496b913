"""A counterexample's scenario file names the invariant and the assertion in plain text, the
machine that wrote it replays it so the same assertion fails again (and passes once the bug
is fixed), and a spent shrink budget writes the smallest counterexample so far, marked cut
short, which still fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from hypothesis.stateful import invariant

from kraftsim.scenario import load_scenario
from kraftsim.scenario.recorded_failure import plain
from kraftsim.testing import ClusterStateMachine, step_shrink
from kraftsim.testing.reproducer import machine_name, same_machine
from tests.testing._machines import repro_path, run_machine, steps_of
from tests.testing._planted import RollThenDowngrade

REPO = Path(__file__).resolve().parents[2]


class Never38(ClusterStateMachine):
    """A user's machine with a planted bug: an invariant that says metadata.version never
    goes below 3.8-IV0, with the cluster handle in its message (an object repr)."""

    releases = ("3.8",)
    controllers = 1
    brokers = 1
    ops = frozenset({"features-downgrade", "run"})
    bug = True

    @invariant()
    def metadata_version_stays(self) -> None:
        if self.cluster is not None and type(self).bug:
            level = self.cluster.metadata_version()
            assert level >= 20, f"{self.cluster} is at metadata.version {level}"


@pytest.fixture
def found(tmp_path):  # type: ignore[no-untyped-def]
    """The planted bug found, shrunk and written: (error, path)."""
    Never38.repro_dir = tmp_path
    Never38.bug = True
    with pytest.raises(AssertionError) as info:
        run_machine(Never38, max_examples=60, steps=4)
    return info.value, repro_path(info.value)


def test_the_file_names_the_invariant_and_the_assertion_in_plain_text(found):  # type: ignore[no-untyped-def]
    error, path = found
    text = path.read_text("utf-8")
    table = tomllib.loads(text)["recorded_failure"]
    assert table["invariant"] == "metadata_version_stays" and "rule" not in table
    assert table["machine"] == machine_name(Never38)
    assert table["message"].startswith("AssertionError: ClusterHandle is at metadata.version ")
    assert "object at" not in text and "0x" not in text
    assert "Does metadata_version_stays hold" in text.split("\n\n", 1)[0]
    assert "cut_short" not in table
    recorded = load_scenario(path).recorded_failure  # the scenario language accepts it
    assert recorded is not None and recorded.message == table["message"] == plain(f"AssertionError: {error}")


def test_replay_fails_again_with_the_same_assertion_until_the_bug_is_fixed(found):  # type: ignore[no-untyped-def]
    error, path = found
    recorded = load_scenario(path).recorded_failure
    assert recorded is not None
    with pytest.raises(AssertionError) as again:
        Never38.replay(path)
    assert plain(f"AssertionError: {again.value}") == recorded.message
    assert any("the recorded failure fails again" in n for n in again.value.__notes__)
    Never38.bug = False
    try:
        Never38.replay(path)  # fixed: every check holds
    finally:
        Never38.bug = True


def test_a_spent_budget_writes_the_smallest_so_far_marked_cut_short(tmp_path):  # type: ignore[no-untyped-def]
    class CutShort(RollThenDowngrade):
        controllers = 1
        brokers = 1
        repro_dir = tmp_path
        shrink_budget_s = 0.0  # spent at once: the first failing example is written
        ops = frozenset({"roll", "features-downgrade", "features-upgrade", "run"})

    with pytest.raises(AssertionError) as info:
        run_machine(CutShort, max_examples=100, steps=8)
    path = repro_path(info.value)
    table = tomllib.loads(path.read_text("utf-8"))["recorded_failure"]
    assert table["cut_short"] is True and table["invariant"] == "metadata_version_never_down_after_roll"
    assert "cut short" in path.read_text("utf-8").split("\n\n", 1)[0]
    with pytest.raises(AssertionError) as again:  # the unshrunk reproducer still fails
        CutShort.replay(path)
    assert plain(f"AssertionError: {again.value}") == table["message"]


def test_shrunk_reproducer_still_fails(tmp_path):  # type: ignore[no-untyped-def]
    class Shrunk(RollThenDowngrade):
        controllers = 1
        brokers = 1
        repro_dir = tmp_path
        ops = frozenset({"roll", "features-downgrade", "features-upgrade", "run"})

    with pytest.raises(AssertionError) as info:
        run_machine(Shrunk, max_examples=100, steps=8)
    path = repro_path(info.value)
    assert [s["op"] for s in steps_of(path)] == ["roll", "features-downgrade"]
    assert "cut_short" not in tomllib.loads(path.read_text("utf-8"))["recorded_failure"]
    with pytest.raises(AssertionError):
        Shrunk.replay(path)


def test_a_file_names_its_machine_with_or_without_the_package() -> None:
    assert same_machine("tests.testing.test_reproducers:Never38", Never38)
    assert same_machine("test_reproducers:Never38", Never38)
    assert not same_machine("tests.testing.test_reproducers:Other", Never38)


USER_TEST = textwrap.dedent('''
    import os
    from hypothesis import settings
    from hypothesis.stateful import invariant
    from kraftsim.testing import ClusterStateMachine


    class Never38(ClusterStateMachine):
        releases = ("3.8",)
        controllers = 1
        brokers = 1
        ops = frozenset({"features-downgrade", "run"})

        @invariant()
        def stays(self):
            if self.cluster is not None and not os.environ.get("FIXED"):
                assert self.cluster.metadata_version() >= 20, "went below 3.8-IV0"


    class Other(Never38):
        pass


    Never38.TestCase.settings = settings(max_examples=60, stateful_step_count=4, deadline=None,
                                         derandomize=True, database=None)
    TestNever38 = Never38.TestCase
    TestOther = Other.TestCase
''')


def test_the_pytest_option_replays_through_the_users_machine(tmp_path):  # type: ignore[no-untyped-def]
    (tmp_path / "test_user.py").write_text(USER_TEST, encoding="utf-8")
    repro = tmp_path / "repro"

    def pytest_run(*args: str, fixed: bool = False) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(REPO), **({"FIXED": "1"} if fixed else {})}
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py",
                               "-k", "TestNever38", "--kraftsim-repro-dir", str(repro), *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)

    assert pytest_run().returncode == 1
    (path,) = repro.glob("*.toml")
    assert tomllib.loads(path.read_text("utf-8"))["recorded_failure"]["machine"] == "test_user:Never38"
    env_args = ("--kraftsim-replay", str(path))
    again = pytest_run(*env_args)
    assert again.returncode == 1 and "went below 3.8-IV0" in again.stdout and "fails again" in again.stdout
    assert pytest_run(*env_args, fixed=True).returncode == 0
    other = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "test_user.py",
                            "-k", "TestOther", *env_args], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert other.returncode == 0 and "not test_user:Other" in other.stdout


def test_the_step_shrinker_keeps_the_steps_the_failure_needs() -> None:
    def fails(candidate: list[int]) -> list[int] | None:  # fails at the step after both 3 and 17 ran
        if 3 in candidate and 17 in candidate:
            return candidate[:candidate.index(17) + 1] if candidate.index(3) < candidate.index(17) else None
        return None

    steps, complete = step_shrink.shrink(list(range(30)), fails, deadline=float("inf"))
    assert (steps, complete) == ([3, 17], True)
    steps, complete = step_shrink.shrink(list(range(30)), fails, deadline=0.0)  # no time: unchanged, cut short
    assert (steps, complete) == (list(range(30)), False)


def test_a_machine_shrinks_by_steps_to_the_two_that_matter(tmp_path):  # type: ignore[no-untyped-def]
    class BySteps(RollThenDowngrade):
        controllers = 1
        brokers = 1
        repro_dir = tmp_path
        shrink_steps = True
        ops = frozenset({"roll", "features-downgrade", "features-upgrade", "run"})

    with pytest.raises(AssertionError) as info:
        run_machine(BySteps, max_examples=100, steps=8)
    assert any("steps in" in note and "shrunk from" in note for note in info.value.__notes__)
    path = repro_path(info.value)
    assert [s["op"] for s in steps_of(path)] == ["roll", "features-downgrade"]
    table = tomllib.loads(path.read_text("utf-8"))["recorded_failure"]
    assert "cut_short" not in table
    with pytest.raises(AssertionError) as again:
        BySteps.replay(path)
    assert plain(f"AssertionError: {again.value}") == table["message"]
