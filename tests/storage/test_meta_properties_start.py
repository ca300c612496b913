"""meta.properties as Kafka reads it and as a KRaft server refuses it at start.

The texts were taken from real Kafka 3.7.2, 4.0.2 and 4.4.0 (kafka.Kafka started on a
formatted directory whose meta.properties was replaced; see
kraftsim/conformance/start_refusal.py and the `kafka` test in tests/conformance): the
reader accepts a file without `version` (v0) whatever ids it lacks, and the server then
refuses it with its own text.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.errors import KraftsimError
from kraftsim.storage.meta_properties import (
    NO_READABLE, MetaProperties, kraft_start_refusal, read_meta_properties, write_meta_properties,
)

CLUSTER = "ZnVsbHkgcmVwcm9kdWNpYg"
HEAD = "#\n#Thu Jan 01 00:00:00 UTC 2026\n"


def _dir(tmp_path: Path, body: str | None) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    if body is not None:
        (d / "meta.properties").write_text(HEAD + body, encoding="latin-1")
    return d


@pytest.mark.parametrize("body", ["", f"cluster.id={CLUSTER}\n", "broker.id=1\n", "node.id=1\n"])
def test_reader_accepts_a_file_without_version_as_v0(tmp_path: Path, body: str) -> None:
    meta = read_meta_properties(_dir(tmp_path, body)).meta
    assert meta.version == 0
    # v0 names its node broker.id; a node.id there is not read
    assert meta.node_id == (1 if "broker.id" in body else None)


@pytest.mark.parametrize(("body", "error"), [
    (f"version=1\ncluster.id={CLUSTER}\n", "Failed to find node.id"),
    ("version=1\nnode.id=1\n", "cluster.id was not found."),
    ("version=2\n", "Unknown meta.properties version number 2"),
    ("version=x\n", "Invalid meta.properties version string 'x'"),
])
def test_reader_refuses_what_kafkas_builder_refuses(tmp_path: Path, body: str, error: str) -> None:
    d = _dir(tmp_path, body)
    with pytest.raises(KraftsimError) as e:
        read_meta_properties(d)
    assert str(e.value) == f"{d / 'meta.properties'}: {error}"


@pytest.mark.parametrize(("body", "text"), [
    ("", "Error: node ID not found in {dir}"),
    (f"cluster.id={CLUSTER}\n", "Error: node ID not found in {dir}"),
    (f"cluster.id={CLUSTER}\nnode.id=1\n", "Error: node ID not found in {dir}"),
    ("broker.id=1\n", "Error: cluster ID not found in {dir}"),
    (f"cluster.id={CLUSTER}\nbroker.id=2\n",
     "Stored node id 2 doesn't match previous node id 1 in {dir}/meta.properties. If you moved your data, make "
     "sure your configured node id matches. If you intend to create a new node, you should remove all data in "
     "your data directories."),
    (f"version=1\ncluster.id={CLUSTER}\nnode.id=3\n",
     "Stored node id 3 doesn't match previous node id 1 in {dir}/meta.properties. If you moved your data, make "
     "sure your configured node id matches. If you intend to create a new node, you should remove all data in "
     "your data directories."),
])
def test_server_start_refusals_have_kafkas_text(tmp_path: Path, body: str, text: str) -> None:
    d = _dir(tmp_path, body)
    refused = kraft_start_refusal(d, 1)
    assert refused is not None
    assert refused.text == text.format(dir=d)
    assert refused.logged is None


@pytest.mark.parametrize("body", [f"version=1\ncluster.id={CLUSTER}\n", "version=1\nnode.id=1\n"])
def test_an_unreadable_file_is_logged_then_none_is_readable(tmp_path: Path, body: str) -> None:
    d = _dir(tmp_path, body)
    refused = kraft_start_refusal(d, 1)
    assert refused is not None and refused.text == NO_READABLE == "No readable meta.properties files found."
    assert refused.logged is not None
    assert refused.logged.startswith(f"Error while reading meta.properties file {d / 'meta.properties'}: ")


def test_a_missing_file_is_an_empty_directory_not_an_error(tmp_path: Path) -> None:
    refused = kraft_start_refusal(_dir(tmp_path, None), 1)
    assert refused is not None and refused.text == NO_READABLE and refused.logged is None


def test_a_v0_file_of_this_broker_starts_as_kafka_rewrites_it(tmp_path: Path) -> None:
    # Kafka 4.4.0 started on it (and rewrote it with a directory id)
    assert kraft_start_refusal(_dir(tmp_path, f"cluster.id={CLUSTER}\nbroker.id=1\n"), 1) is None


@settings(max_examples=40, deadline=None)
@given(node_id=st.integers(0, 2**31 - 1), other=st.one_of(st.none(), st.integers(0, 2**31 - 1)))
def test_a_formatted_v1_directory_starts_only_for_its_own_node(tmp_path_factory: pytest.TempPathFactory,
                                                               node_id: int, other: int | None) -> None:
    configured = node_id if other is None else other
    d = tmp_path_factory.mktemp("v1")
    write_meta_properties(d, MetaProperties(1, CLUSTER, node_id, None), date="Thu Jan 01 00:00:00 UTC 2026")
    refused = kraft_start_refusal(d, configured)
    if node_id == configured:
        assert refused is None
    else:
        assert refused is not None and refused.text.startswith(f"Stored node id {node_id} doesn't match previous "
                                                               f"node id {configured} in ")
