"""Kafka 4.3's replay filter of ConfigRecords (KAFKA-19851), checked against the data file
and a real 3.x log: what each release keeps is computed here from replay_configs.toml,
independently of the catalog code."""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kraftsim.image import (
    BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, TOPIC, MetadataImage, image_from_records, load_path, resource_type_name,
)
from kraftsim.versions import CatalogError, default_catalog, load_catalog_text
from tests.conftest import ORACLE
from tests.image.helpers import data_records, needs_oracle, read_entries, rec

CAT = default_catalog()
DATA = Path(__file__).resolve().parents[2] / "kraftsim" / "versions" / "data" / "replay_configs.toml"
RJM = ORACLE / "cp-kafka-3.6_rjmfernandes" / "__cluster_metadata-0"


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


def defined_names(release: str) -> dict[str, frozenset[str]]:
    """Per listed resource type, the names `release` defines: the newest entry of the data
    file whose `since` is at or below it."""
    doc = tomllib.loads(DATA.read_text())
    out: dict[str, frozenset[str]] = {t: frozenset() for t in doc["replay_configs"]["listed"]}
    for e in sorted(doc["replay_config_names"], key=lambda e: _key(e["since"])):
        if _key(e["since"]) <= _key(release):
            out[e["resource_type"]] = frozenset(e["names"])
    return out


def kafka_keeps(release: str, rtype: int, name: str) -> bool:
    """DefaultSupportedConfigChecker from 4.3; every record before."""
    if _key(release) < (4, 3):
        return True
    if rtype == BROKER:
        return True
    names = defined_names(release).get(resource_type_name(rtype))
    return names is not None and name in names


def test_the_data_file_names_what_4_4_added() -> None:
    # 4.3.0 and 4.3.1 define the same lists; 4.4.0 adds topic and group configs
    assert defined_names("4.3.0") == defined_names("4.3.1")
    added = defined_names("4.4.0")["TOPIC"] - defined_names("4.3.1")["TOPIC"]
    assert "errors.deadletterqueue.group.enable" in added
    assert not defined_names("4.3.1")["TOPIC"] - defined_names("4.4.0")["TOPIC"]


@needs_oracle
@pytest.mark.parametrize("release", ["4.2.0", "4.3.1", "4.4.0"])
def test_a_3_6_log_replayed_as_each_release(release: str) -> None:
    """As 4.2 every config of the 3.6 log stays; as 4.3.1 and 4.4.0 exactly those the release
    does not define go, and the load counts them record by record."""
    as_writer = load_path(RJM, catalog=CAT.at_release("3.6"), snapshot="none")
    loaded = load_path(RJM, catalog=CAT.at_release(release), snapshot="none")
    expected = {res: {k: v for k, v in data.items() if kafka_keeps(release, res[0], k)}
                for res, data in as_writer.image.configs.sorted_resources()}
    got = {res: dict(data) for res, data in loaded.image.configs.sorted_resources()}
    assert got == {res: data for res, data in expected.items() if data}

    records = [e.message for e in data_records(read_entries(RJM / "00000000000000000000.log"))
               if e.record_type.name == "ConfigRecord"]
    dropped = Counter(f"{resource_type_name(m.resource_type)} {m.name}" for m in records
                      if not kafka_keeps(release, m.resource_type, m.name))
    assert loaded.loader.configs_dropped.by_config() == dict(sorted(dropped.items()))
    if release == "4.2.0":
        assert not dropped and got == {res: dict(d) for res, d in as_writer.image.configs.sorted_resources()}
    else:  # the set holds a removed topic config (KIP-937 replaced it), so the check can fail
        assert dropped["TOPIC message.timestamp.difference.max.ms"] > 0


@pytest.mark.parametrize("release", ["4.2.0", "4.3.0", "4.3.1", "4.4.0"])
def test_broker_configs_always_kept_other_types_dropped(release: str) -> None:
    names = ["message.format.version", "made.up.name", "retention.ms", "kafka.server"]
    records = [rec("FeatureLevelRecord", name="metadata.version", feature_level=29)]
    for rtype in (BROKER, BROKER_LOGGER, 64, 0):  # 64 and 0: no type Kafka names
        records += [rec("ConfigRecord", resource_type=rtype, resource_name="1", name=n, value="v") for n in names]
    img = replay_as(records, release)
    assert set(img.configs.config(BROKER, "1")) == set(names)
    others = {t: set(img.configs.config(t, "1")) for t in (BROKER_LOGGER, 64, 0)}
    assert others == ({t: set(names) for t in others} if release == "4.2.0" else {t: set() for t in others})


def replay_as(records: list, release: str) -> MetadataImage:
    return image_from_records(records, catalog=CAT.at_release(release))


TYPES = st.sampled_from([TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, 1, 64])
NAMES = st.one_of(st.sampled_from(sorted(defined_names("4.4.0")["TOPIC"] | defined_names("4.4.0")["GROUP"]
                                         | {"interval.ms", "message.format.version", "retention.ms"})),
                  st.text("abcdefghijklmnopqrstuvwxyz.", min_size=1, max_size=12))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(TYPES, NAMES, st.one_of(st.none(), st.just("v"))), max_size=12),
       st.sampled_from(["4.2.0", "4.3.1", "4.4.0"]))
def test_a_config_stays_exactly_when_the_release_keeps_it(changes: list, release: str) -> None:
    records = [rec("ConfigRecord", resource_type=t, resource_name="r", name=n, value=v) for t, n, v in changes]
    img = replay_as(records, release)
    expected: dict[tuple[int, str], dict[str, str]] = {}
    for t, n, v in changes:
        if not kafka_keeps(release, t, n):
            continue
        data = expected.setdefault((t, "r"), {})
        if v is None:
            data.pop(n, None)
        else:
            data[n] = v
    assert {res: dict(d) for res, d in img.configs.sorted_resources()} == {r: d for r, d in expected.items() if d}


def test_filters_compare_by_what_they_keep() -> None:
    # snapshot_contents reloads as the writer only when the filters differ
    assert CAT.at_release("4.2.0").config_replay_filter() is None
    f43, f44 = CAT.at_release("4.3.0").config_replay_filter(), CAT.at_release("4.4.0").config_replay_filter()
    assert f43 is not None and f44 is not None
    assert f43 == CAT.at_release("4.3.1").config_replay_filter() and f43 != f44


def test_a_user_catalog_can_extend_the_lists_but_not_mislabel_them() -> None:
    # a later entry takes over from its own release on: a hypothetical 4.4.0 list
    extended = load_catalog_text('[[replay_config_names]]\nsince = "4.4.0"\nresource_type = "GROUP"\n'
                                 'names = ["my.group.config"]\n', "more.toml")
    keeps = extended.at_release("4.4.0").config_replay_filter()
    assert keeps is not None and keeps.keeps("GROUP", "my.group.config")
    assert not keeps.keeps("GROUP", "consumer.session.timeout.ms")
    assert extended.at_release("4.3.1").config_replay_filter() == CAT.at_release("4.3.1").config_replay_filter()
    with pytest.raises(CatalogError, match="BROKER config names since 4.4.0: the type is not one kept by name"):
        load_catalog_text('[[replay_config_names]]\nsince = "4.4.0"\nresource_type = "BROKER"\nnames = ["x"]\n',
                          "broken.toml")
