"""The machine finds bugs planted through a catalog and a controller policy, shrinks each
to a short sequence, writes it as a scenario file, and the file replays to the same state."""

from __future__ import annotations

import pytest

from kraftsim.testing import ClusterStateMachine, PropertyFailed
from kraftsim.testing import properties
from tests.testing._machines import (
    planted_lossless, repro_path, run_cli_json, run_machine, skipped_broker_quorum_check, steps_of,
)

#: The planted bugs are about feature changes and software: the machines stay on those ops
#: so that each test meets its own bug (the default machine covers the faults).
FEATURES_AND_ROLLS = frozenset({"roll", "features-upgrade", "features-downgrade", "features-disable",
                                "create-topics", "run"})


def _replays_to_same_state(path, error_name):  # type: ignore[no-untyped-def]
    text = path.read_text("utf-8")
    assert error_name in text.split("\n\n", 1)[0]  # the failing property is in the header comment
    code, result = run_cli_json(path)
    assert [e["key"] for e in result["expect"] if not e["ok"]] == [], result["expect"]
    assert all(s["ok"] for s in result["steps"]), result["steps"]
    return code, result


def test_lossless_claim_that_drops_log_dirs_is_found(tmp_path):
    class LosslessClaim(ClusterStateMachine):
        releases = ("3.7",)
        controllers = 1
        brokers = 1
        repro_dir = tmp_path
        ops = FEATURES_AND_ROLLS

    with planted_lossless(17):  # 3.7-IV2 adds the brokers' log dirs, but claims no change
        with pytest.raises(PropertyFailed) as info:
            run_machine(LosslessClaim, max_examples=150, steps=4)
        assert info.value.name == properties.LOSSLESS_DOWNGRADE
        assert "log dir" in info.value.detail
        path = repro_path(info.value)
        steps = steps_of(path)
        assert len(steps) <= 2
        assert steps[-1]["op"] == "features-downgrade" and steps[-1]["features"]["metadata.version"] < 17
        code, result = _replays_to_same_state(path, properties.LOSSLESS_DOWNGRADE)
        assert result["final"]["metadata_version"]["level"] == steps[-1]["features"]["metadata.version"]
        assert code == 0


def test_lossless_downgrades_pass_without_the_plant(tmp_path):
    class Honest(ClusterStateMachine):
        releases = ("3.7",)
        controllers = 1
        brokers = 1
        repro_dir = tmp_path
        ops = FEATURES_AND_ROLLS

    run_machine(Honest, max_examples=40, steps=6)
    assert not list(tmp_path.iterdir())


def test_skipped_quorum_check_is_found(tmp_path):
    class SkippedCheck(ClusterStateMachine):
        releases = ("3.7", "3.8")
        initial_release = "3.7"
        controllers = 1
        brokers = 1
        repro_dir = tmp_path
        ops = frozenset({"roll", "features-upgrade", "features-downgrade", "run"})

    with skipped_broker_quorum_check():
        with pytest.raises(PropertyFailed) as info:
            run_machine(SkippedCheck, max_examples=300, steps=8)
        assert info.value.name in (properties.REFUSAL_AS_KAFKA, properties.FINALIZED_SUPPORTED)
        assert "Broker 2" in info.value.detail or "broker 2" in info.value.detail
        path = repro_path(info.value)
        steps = steps_of(path)
        assert len(steps) <= 3
        assert steps[-1]["op"] == "features-upgrade" and "expect_error" not in steps[-1]
        _replays_to_same_state(path, info.value.name)
