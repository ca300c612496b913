"""The controller's check of client-metrics subscriptions (KIP-714) and how a broker describes
them, per release (the whole table of verdicts is compared with each release's own
ClientMetricsConfigs in tests/conformance/test_client_metrics_configs_vs_jars.py; these pin the
release differences and the controller's path without a JVM)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kraftsim.controller.client_metrics import (
    CLIENT_METRICS_CONFIG, MATCH_SELECTORS, client_metrics_check,
    describe_client_metrics_configs,
)
from kraftsim.controller.config_descriptions import DEFAULT_CONFIG
from kraftsim.controller.configs import (
    OP_APPEND, OP_DELETE, OP_SET, AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest,
    incremental_alter_configs,
)
from kraftsim.javacompat import concurrent_hash_map_known_order, concurrent_hash_map_order
from tests.controller.cluster_support import RuleCluster, to_json
from tests.controller.config_changes import assert_each_change_taken_as_checked, change_batches

CLIENT_METRICS = 16


def verdict(release: str, configs: dict[str, str], name: str = "s") -> tuple[str, str | None]:
    v = client_metrics_check(release, name, configs)
    assert v.unmodelled is None
    return v.error.name, v.error.message


@pytest.mark.parametrize("release", ["3.7.2", "3.9.2", "4.0.2", "4.4.0"])
def test_every_release_refuses_an_unknown_name_an_empty_subscription_and_an_interval_out_of_range(release):
    assert verdict(release, {"metrics": "org.apache.kafka.", "interval.ms": "1000", "match": "client_id=a.*"}) == \
        ("NONE", None)
    assert verdict(release, {"metrics": "a"}, name="") == ("INVALID_REQUEST", "Subscription name can't be empty")
    assert verdict(release, {"metric": "a"}) == ("INVALID_REQUEST", "Unknown client metrics configuration: metric")
    for interval in ("99", "3600001"):
        assert verdict(release, {"interval.ms": interval}) == (
            "INVALID_REQUEST", f"Invalid value {interval} for interval.ms, interval must be between 100 and 3600000 "
                               "(1 hour)")
    assert verdict(release, {"match": "client_ip=1"}) == ("INVALID_CONFIG", "Illegal client matching pattern: "
                                                                           "client_ip=1")
    assert verdict(release, {"match": "client_id=(a"}) == ("INVALID_CONFIG", "Illegal client matching pattern: "
                                                                            "client_id=(a")


def test_how_values_are_read_changed_in_4_0_and_4_2():
    # 3.7 to 3.9 read interval.ms with Integer.parseInt (an unexpected error, no text) and split match themselves
    assert verdict("3.9.2", {"interval.ms": "soon"}) == ("UNKNOWN_SERVER_ERROR", None)
    assert verdict("3.9.2", {"interval.ms": " 500"}) == ("UNKNOWN_SERVER_ERROR", None)
    assert verdict("3.9.2", {"match": "client_id=a,"}) == ("NONE", None)
    assert verdict("3.9.2", {"match": ""}) == ("INVALID_CONFIG", "Illegal client matching pattern: ")
    # 4.0 parses them by the definitions
    assert verdict("4.0.2", {"interval.ms": "soon"}) == (
        "INVALID_CONFIG", "Invalid value soon for configuration interval.ms: Not a number of type INT")
    assert verdict("4.0.2", {"interval.ms": " 500"}) == ("NONE", None)
    assert verdict("4.0.2", {"match": "client_id=a,"}) == ("INVALID_CONFIG", "Illegal client matching pattern: ")
    assert verdict("4.0.2", {"match": ""}) == ("NONE", None)
    # 4.2 refuses an empty list element
    assert verdict("4.4.0", {"metrics": "a,"}) == ("INVALID_CONFIG", "Configuration 'metrics' values must not be empty.")
    assert verdict("4.1.2", {"metrics": "a,"}) == ("NONE", None)


@pytest.mark.parametrize("regex", ["[a-z]+", "a{2}", "\\d", "(?i)a", "^*", "a$b"])
def test_a_regex_past_the_dialect_java_and_python_share_is_left_unmodelled(regex):
    v = client_metrics_check("4.4.0", "s", {"match": f"client_id={regex}"})
    assert v.unmodelled is not None and "compiles in Java" in v.unmodelled


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(MATCH_SELECTORS)), st.text(alphabet="abz09._-*+?|()", min_size=1, max_size=8))
def test_a_portable_regex_is_judged_as_python_compiles_it(selector, regex):
    import re

    assume("(?" not in regex)  # (a group construct: left unmodelled)
    try:
        re.compile(regex)
        ok = True
    except re.error:
        ok = False
    v = client_metrics_check("4.0.2", "s", {"match": f"{selector}={regex}"})
    assert v.unmodelled is None
    assert (v.error.name == "NONE") == ok


def test_up_to_4_0_a_broker_describes_only_the_held_configs_as_held():
    held = {"metrics": "a, b", "interval.ms": "01000"}
    described = describe_client_metrics_configs("4.0.2", held, ["match"], documentation=True)
    assert [(c.name, c.value, c.source, c.config_type, c.synonyms, c.documentation) for c in described] == [
        (n, held[n], CLIENT_METRICS_CONFIG, 0, (), "") for n in concurrent_hash_map_order(sorted(held))]
    assert describe_client_metrics_configs("3.7.2", {}) == []


def test_from_4_1_a_broker_describes_every_config_parsed_with_its_default_type_and_documentation():
    held = {"metrics": "a, b", "interval.ms": "01000"}
    described = {c.name: c for c in describe_client_metrics_configs("4.4.0", held, documentation=True)}
    assert set(described) == {"metrics", "interval.ms", "match"}
    assert (described["metrics"].value, described["metrics"].source, described["metrics"].config_type) == \
        ("a,b", CLIENT_METRICS_CONFIG, 7)
    assert described["interval.ms"].value == "1000" and described["interval.ms"].synonyms[0].value == "1000"
    assert (described["match"].value, described["match"].source, described["match"].synonyms) == ("", DEFAULT_CONFIG,
                                                                                                   ())
    assert described["match"].documentation == "Client match criteria"
    assert [c.name for c in describe_client_metrics_configs("4.1.2", {}, ["match"])] == ["match"]
    assert all(c.documentation is None for c in describe_client_metrics_configs("4.1.2", held))


def test_the_list_order_is_given_only_where_it_does_not_depend_on_history():
    assert concurrent_hash_map_known_order(["b", "a"]) == concurrent_hash_map_order(["b", "a"])
    assert concurrent_hash_map_known_order([f"s{i}" for i in range(12)]) is None


def _alter(c: RuleCluster, name: str, *ops: AlterableConfig):
    req = IncrementalAlterConfigsRequest((AlterConfigsResource(CLIENT_METRICS, name, ops),))
    return c.run(incremental_alter_configs, req)


def test_the_controller_judges_what_a_change_leaves_the_subscription_with():
    c = RuleCluster("4.1-IV1")
    r = _alter(c, "sub", AlterableConfig("interval.ms", OP_SET, "1000"), AlterableConfig("metrics", OP_SET, "x."))
    assert [(a.error_code, a.error_message) for a in r.response.responses] == [(0, None)]
    assert sorted((d["name"], d["value"]) for d in (to_json(p)["data"] for p in r.records)) == [
        ("interval.ms", "1000"), ("metrics", "x.")]
    assert c.image.configs.config(CLIENT_METRICS, "sub") == {"interval.ms": "1000", "metrics": "x."}
    r = _alter(c, "sub", AlterableConfig("interval.ms", OP_SET, "5"))
    assert r.response.responses[0].error_code == 42 and not r.records  # INVALID_REQUEST
    r = _alter(c, "sub", AlterableConfig("metrics", OP_APPEND, "y."))
    assert r.response.responses[0].error_message == "Can't APPEND to key metrics because its type is not LIST."
    r = _alter(c, "sub", AlterableConfig("interval.ms", OP_DELETE), AlterableConfig("metrics", OP_DELETE))
    assert r.response.responses[0].error_code == 0
    assert c.image.configs.config(CLIENT_METRICS, "sub") == {}


_VALUES = {"metrics": ["a.", "org.apache.kafka.", "a.,b.", "*"], "interval.ms": ["100", "99", "5000", "x", "3600001"],
           "match": ["client_id=a", "client_id=(a", "client_ip=1", "client_id=a.*,client_software_name=b"]}


@settings(max_examples=40, deadline=None)
@given(change_batches(_VALUES))
def test_a_subscription_holds_exactly_the_changes_its_release_took(batches):
    """Whatever the order of changes, the controller writes a change exactly when the check of
    what it would leave passes, and the subscription then holds that."""
    c = RuleCluster("4.1-IV1")
    release = c.ctx().catalog.release.name
    assert_each_change_taken_as_checked(c, CLIENT_METRICS, "sub", batches,
                                        lambda after: client_metrics_check(release, "sub", after))
