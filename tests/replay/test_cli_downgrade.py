"""`kraftsim downgrade-report`, in-process on oracle sets."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import run
from tests.conftest import ORACLE

pytestmark = pytest.mark.skipif(not ORACLE.is_dir(), reason="../shared/oracle is not present")

K42 = ORACLE / "kafka-4.2_induswargods"
K41 = ORACLE / "kafka-4.1_dkoh12"
RJM = ORACLE / "cp-kafka-3.6_rjmfernandes"




def test_lossy_downgrade_lists_every_item_and_kafkas_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "downgrade-report", str(K42), "--to", "3.6-IV2", "--json")
    assert code == 1
    r = json.loads(out)
    assert (r["current"], r["target"], r["direction"]) == ("4.2-IV1", "3.6-IV2", "downgrade")
    assert r["lossless"] is False and r["catalog_lossy"] is True
    assert [(x["kind"], x["entity"]) for x in r["lost"]] == [
        ("broker log dirs", "broker 1"), ("controller registration", "controller 1"),
        ("replica directory assignment", "topic test-topic partition 0")]
    assert r["kafka_loss_summaries"] == ["the online log directories of one or more brokers",
                                         "controller registration data",
                                         "the directory assignment state of one or more replicas"]
    # The cluster's own release, from what controller 1's registration advertises, unless --release says otherwise.
    assert r["controller"] == "node 1 running Kafka 4.2.2" and r["controller_release"] == "4.2.2"
    assert r["controller_release_reason"].startswith("the cluster's release: controller 1's registration advertises "
                                                     "exactly what Kafka 4.2.2 supports (")
    assert "metadata.version 7-29" in r["controller_release_reason"]
    safe, unsafe = r["verdicts"]
    assert (safe["upgrade_type"], safe["accepted"]) == ("SAFE_DOWNGRADE", False)
    assert safe["error"] == "INVALID_UPDATE_VERSION"
    assert safe["message"] == ("Unsupported metadata.version downgrade from 29 to 14. Refusing to perform the "
                               "requested downgrade because it might delete metadata information.")
    assert unsafe["message"] == ("Unsupported metadata.version downgrade from 29 to 14. Unsafe metadata downgrade is "
                                 "not supported in this version.")
    assert safe["tool_line"] == ("Can not downgrade metadata.version to 14. The update failed for all features since "
                                 "the following feature had an error: " + safe["message"])
    assert any(n.startswith("eligible.leader.replicas.version=1 needs metadata.version 4.0-IV1") for n in
               r["feature_notes"])


def test_lossless_downgrade_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "downgrade-report", str(K42), "--metadata", "23")
    assert code == 0
    assert "data: nothing in this image would be lost (writer release 4.2.2)" in out
    assert "controller: node 1 running Kafka 4.2.2 (the cluster's release: controller 1's registration" in out
    assert "  SAFE_DOWNGRADE: accepted" in out
    assert "    kafka-features --dry-run: metadata.version can be downgraded to 23." in out


def test_refused_although_the_data_would_survive(capsys: pytest.CaptureFixture[str]) -> None:
    """3.6-IV2 → 3.5-IV2 crosses a metadata change (delegation tokens), but this cluster
    has none: nothing would be lost, yet Kafka refuses; the 4.0 line words it the old way."""
    code, out, _ = run(capsys, "downgrade-report", str(RJM), "--to", "3.5-IV2", "--release", "4.0", "--json")
    assert code == 0
    r = json.loads(out)
    assert r["lossless"] is True and r["catalog_lossy"] is True and r["lost"] == []
    assert "  record type DelegationTokenRecord cannot be written" in r["version_changes"]
    assert r["verdicts"][0]["message"] == ("Invalid metadata.version 11. Refusing to perform the requested downgrade "
                                           "because it might delete metadata information.")


def test_the_predicted_tool_line_is_worded_as_the_controllers_release_words_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A 3.x controller answers the feature alone; 4.0 prefixes the whole request's failure."""
    lines = {}
    for release in ("3.6", "4.0"):
        code, out, _ = run(capsys, "downgrade-report", str(RJM), "--to", "3.5-IV2", "--release", release, "--json")
        assert code == 0
        lines[release] = json.loads(out)["verdicts"][0]["tool_line"]
    refusal = "Invalid metadata.version 11. Refusing to perform the requested downgrade because it might delete " \
              "metadata information."
    # (3.3-3.6 still named UNSAFE_DOWNGRADE: live 3.6.2)
    assert lines["3.6"] == ("Can not downgrade metadata.version to 11. " + refusal
                            + " Retry using UNSAFE_DOWNGRADE if you want to force the downgrade to proceed.")
    assert lines["4.0"] == ("Can not downgrade metadata.version to 11. The update failed for all features since the "
                            "following feature had an error: " + refusal)


def test_elr_fields_are_lost_below_their_version(capsys: pytest.CaptureFixture[str]) -> None:
    """At 7209 no partition has ELR members; after the broker's shutdown at the end of the
    log the 51 leaderless partitions do, and 3.9-IV0 cannot hold them."""
    code, out, _ = run(capsys, "downgrade-report", f"{K41}@7209", "--to", "3.9-IV0", "--json")
    assert code == 0 and json.loads(out)["lost"] == []
    code, out, _ = run(capsys, "downgrade-report", str(K41), "--to", "3.9-IV0", "--json")
    assert code == 1
    r = json.loads(out)
    assert r["offset"] == 7707
    assert {x["kind"] for x in r["lost"]} == {"partition ELR"}
    assert len(r["lost"]) == 51 and r["lost"][0]["entity"] == "topic __consumer_offsets partition 0"


def test_a_target_the_clusters_own_release_does_not_know_is_refused_as_it_would_refuse_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A 3.6 cluster (no controller registrations: its brokers advertise metadata.version up
    to 14) does not know 3.7-IV4, as Kafka 3.6's kafka-features does not."""
    code, out, err = run(capsys, "downgrade-report", str(RJM), "--metadata", "3.7-IV4")
    assert code == 2 and out == ""
    assert "Unknown metadata.version '3.7-IV4'" in err
    assert ("(the controller runs Kafka 3.6.2: the cluster's release: the registered nodes advertise "
            "metadata.version up to 14; --release R to ask another release's controller)") in err


def test_upgrade_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "downgrade-report", str(RJM), "--to", "3.7-IV4", "--release", "4.0", "--json")
    r = json.loads(out)
    assert code == 0 and r["direction"] == "upgrade"
    (verdict,) = r["verdicts"]
    # the registered broker runs 3.6 software: it cannot take 3.7-IV4 (level 19)
    assert verdict["accepted"] is False
    assert verdict["message"] == ("Invalid update version 19 for feature metadata.version. "
                                  "Broker 1 only supports versions 1-14")


def test_no_finalized_metadata_version_is_nothing_to_downgrade(capsys: pytest.CaptureFixture[str]) -> None:
    """At offset 0 nothing is finalized: not an "unchanged" metadata.version, but none at all."""
    code, out, _ = run(capsys, "downgrade-report", str(K42), "--metadata", "3.7-IV0", "--at", "0")
    assert code == 0  # nothing would be lost
    assert out.splitlines()[0] == (f"no metadata.version is finalized for {K42} at offset 0: nothing to downgrade "
                                   "to 3.7-IV0 (15)")
    assert "unchanged" not in out
    code, out, _ = run(capsys, "downgrade-report", str(K42), "--metadata", "3.7-IV0", "--at", "0", "--json")
    r = json.loads(out)
    assert code == 0 and (r["current"], r["direction"], r["verdicts"]) == (None, "none", [])
    assert r["verdict"]["kafka"] == "no finalized metadata.version to change"


def test_a_bootstrap_file_names_no_controller_node(capsys: pytest.CaptureFixture[str]) -> None:
    """A bootstrap file has no controller: the release's rules answer, and no node 0 is invented."""
    code, out, _ = run(capsys, "downgrade-report", str(K42 / "bootstrap.checkpoint"), "--metadata", "3.6-IV2")
    assert code == 0
    assert "node 0" not in out
    assert out.splitlines()[1] == ("verdict, policy kafka (a controller running Kafka 4.2.2, no node known; the change "
                                   "crosses a metadata change): refused")
    assert "controller: a controller running Kafka 4.2.2, no node known (the cluster's release: " in out
    code, out, _ = run(capsys, "downgrade-report", str(K42 / "bootstrap.checkpoint"), "--metadata", "3.6-IV2", "--json")
    r = json.loads(out)
    assert code == 0 and r["controller"] == "a controller running Kafka 4.2.2, no node known"


@pytest.mark.parametrize("argv,expected", [
    (["downgrade-report", str(K42), "--to", "2.0"], "Unknown metadata.version '2.0'"),
    (["downgrade-report", str(K42), "--to", "3"], "No MetadataVersion with feature level 3"),
    (["downgrade-report", "/no/such", "--to", "14"], "/no/such: no such file or directory"),
    (["downgrade-report", str(K42), "--to", "14", "--at", "99999999"], "beyond the end of the log"),
    # an id that is no controller there was answered for as if it were the active one
    (["downgrade-report", str(K42), "--to", "14", "--controller-id", "99"],
     "--controller-id 99: not a controller of this cluster (its controllers: "),
    # a bootstrap file names no controller: any id was taken on trust and printed as "node 42"
    (["downgrade-report", str(K42 / "bootstrap.checkpoint"), "--to", "14", "--controller-id", "42"],
     "--controller-id 42: not a controller of this cluster (none is known here: "),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and expected in err, err


def test_the_verdict_per_policy_comes_first_then_losses_by_kind_and_topic(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "downgrade-report", str(K41), "--to", "3.9-IV0")
    assert code == 1
    lines = out.splitlines()
    assert lines[1] == ("verdict, policy kafka (node 1 running Kafka 4.1.2; the change crosses a metadata change): "
                        "refused")
    assert lines[6:9] == [
        "verdict, policy kip-778 (kraftsim's, beyond Kafka): refused; accepted only as an unsafe downgrade (--unsafe)",
        "  UNSAFE_DOWNGRADE: accepted",
        "    kafka-features --dry-run: metadata.version can be downgraded to 21."]
    assert lines[9:13] == ["data: 51 item(s) would be lost (writer release 4.1.2), by kind and topic:",
                           "  partition ELR: 51 in 2 topic(s)",
                           "    __consumer_offsets: 50 partition(s)",
                           "    test_topic: 1 partition(s)"]
    assert "partition 7" not in out and "  (--details lists every item; --json has them all)" in lines
    code, details, _ = run(capsys, "downgrade-report", str(K41), "--to", "3.9-IV0", "--details")
    assert code == 1 and "(--details" not in details
    listed = [line.strip() for line in details.splitlines() if line.startswith("      topic ")]
    assert len(listed) == 51 and listed[:3] == [f"topic __consumer_offsets partition {p}" for p in (0, 1, 2)]
    code, js, _ = run(capsys, "downgrade-report", str(K41), "--to", "3.9-IV0", "--json")
    r = json.loads(js)
    assert r["verdict"] == {"kafka": "refused", "kip-778": "refused; accepted only as an unsafe downgrade (--unsafe)"}
    assert r["loss_groups"] == [{"kind": "partition ELR", "topic": "__consumer_offsets", "count": 50},
                                {"kind": "partition ELR", "topic": "test_topic", "count": 1}]
    assert [(v["upgrade_type"], v["accepted"]) for v in r["kip778_verdicts"]] == [
        ("SAFE_DOWNGRADE", False), ("UNSAFE_DOWNGRADE", True)]


def test_a_lossless_downgrade_is_accepted_by_both_policies(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "downgrade-report", str(K42), "--metadata", "23")
    assert code == 0
    assert out.splitlines()[1].endswith("crosses no metadata change): accepted")
    assert "verdict, policy kip-778 (kraftsim's, beyond Kafka): the same" in out
