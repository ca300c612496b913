"""Row functions for the fan-out tests (module-level, so Spark workers can run them)."""

from __future__ import annotations

import os

import pyarrow as pa

SCHEMA = pa.schema([
    pa.field("item", pa.int64(), nullable=False),
    pa.field("copy", pa.int32(), nullable=False),
    pa.field("label", pa.string()),
    pa.field("parts", pa.list_(pa.struct([pa.field("name", pa.string()), pa.field("value", pa.float64())]))),
    pa.field("pid", pa.int64()),
])


def copies(item: dict) -> list[dict]:
    """`n % 4` rows per item (none for multiples of 4), with nulls and nested values."""
    n = item["n"]
    return [{"item": n, "copy": c, "label": None if n % 3 == 0 else f"{item['word']}-{c}",
             "parts": [{"name": f"p{k}", "value": n / (k + 1)} for k in range(c)], "pid": os.getpid()}
            for c in range(n % 4)]
