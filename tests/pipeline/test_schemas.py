"""The pipeline's schemas: versioned, documented, and what the row functions produce.

- Every schema names itself and its version in its metadata, and every field has a doc.
- The README's schema section is exactly what schemas.toml says (docs cannot drift).
- check_schema refuses another schema, another version, or changed columns.
- Job schemas extend run_results; their row functions' rows convert to them without loss.
- Spark can hold every schema (Arrow -> Spark types).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from kraftsim.errors import KraftsimError
from kraftsim.pipeline import schemas
from kraftsim.pipeline.schemas import check_schema, field_specs, identify, schema, schema_names, schemas_markdown

README = Path(schemas.__file__).with_name("README.md")


def test_every_schema_is_versioned_and_documented() -> None:
    assert set(schema_names()) >= {"records", "image_entities", "run_results", "corpus_files", "downgrade_matrix",
                                    "snapshot_cost"}
    for name in schema_names():
        s = schema(name)
        assert identify(s) == (name, 2 if name == "snapshot_cost" else 1)  # 2: Kafka's own times added
        for f in s:
            assert f.metadata[b"doc"].strip(), f"{name}.{f.name} has no doc"
        names = [f.name for f in s]
        assert len(names) == len(set(names))


def test_readme_documents_the_schemas_as_defined() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("<!-- schemas:begin -->\n", 1)[1].split("<!-- schemas:end -->", 1)[0]
    assert section.strip() == schemas_markdown().strip(), \
        "regenerate the README section with kraftsim.pipeline.schemas.schemas_markdown()"


def test_job_schemas_extend_run_results() -> None:
    base = [f.name for f in schema("run_results")]
    for name in ("downgrade_matrix", "snapshot_cost"):
        assert [f.name for f in schema(name)][:len(base)] == base
        assert field_specs(name)[:len(base)] == field_specs("run_results")


def test_check_schema_refuses_what_is_not_the_schema() -> None:
    check_schema(schema("records"), "records")
    with pytest.raises(KraftsimError, match="expected kraftsim schema records version 1, found schema corpus_files"):
        check_schema(schema("corpus_files"), "records")
    bumped = schema("records").with_metadata({b"kraftsim.schema": b"records", b"kraftsim.schema_version": b"2"})
    with pytest.raises(KraftsimError, match="found schema records version 2"):
        check_schema(bumped, "records")
    with pytest.raises(KraftsimError, match="found no kraftsim schema"):
        check_schema(schema("records").remove_metadata(), "records")
    changed = schema("records").set(3, pa.field("offset", pa.int32(), nullable=False)).with_metadata(
        schema("records").metadata)
    with pytest.raises(KraftsimError, match="columns do not match"):
        check_schema(changed, "records")


def test_nested_types_come_from_the_struct_definitions() -> None:
    corpus = schema("corpus_files")
    rt = corpus.field("record_types").type
    assert pa.types.is_list(rt) and [f.name for f in rt.value_type] == ["type", "records", "bytes"]
    losses = schema("downgrade_matrix").field("losses").type.value_type
    assert [(f.name, f.type) for f in losses] == [("kind", pa.string()), ("entity", pa.string()),
                                                  ("summary", pa.string()), ("kafka_reported", pa.bool_())]


def test_unknown_schema_is_a_clear_error() -> None:
    with pytest.raises(KraftsimError, match="no pipeline schema named 'nope'"):
        schema("nope")


def test_spark_can_hold_every_schema() -> None:
    from pyspark.sql.pandas.types import from_arrow_schema

    for name in schema_names():
        spark_type = from_arrow_schema(schema(name))
        assert [f.name for f in spark_type.fields] == schema(name).names
