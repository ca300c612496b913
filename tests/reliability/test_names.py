"""Topic names Kafka could never have written (Topic.validate refuses them), found in a log,
are reported by `log verify`, shown escaped."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kraftsim.protocol.batch import crc32c
from tests.cli_support import run


def _rename_topic(segment: Path, old: bytes, new: bytes) -> None:
    """Replace a topic name in a segment (same length) and fix its batch's CRC."""
    data = bytearray(segment.read_bytes())
    at = data.index(old)
    data[at:at + len(old)] = new
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + length
        if pos <= at < end:
            struct.pack_into(">I", data, pos + 17, crc32c(bytes(data[pos + 21:end])))
        pos = end
    segment.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["../x\x1b]0", "a b/c d", "ab\u202ecd"])
def test_log_verify_reports_impossible_topic_names(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   name: str) -> None:
    d = tmp_path / "c"
    assert run(capsys, "cluster", "create", str(d), "--controllers", "1", "--brokers", "1", "--release", "3.8")[0] == 0
    raw = name.encode()
    legal = "q" * (len(raw) - 1) + "0"  # `--prefix qqq...` names the topic qqq...0, as long as `name`
    assert run(capsys, "topics", "--cluster", str(d), "create", "--count", "1", "--prefix", legal[:-1])[0] == 0
    segment = sorted((d / "node-1" / "__cluster_metadata-0").glob("*.log"))[0]
    code, out, _ = run(capsys, "log", "verify", str(segment))
    assert code == 0 and "could never" not in out
    _rename_topic(segment, legal.encode(), raw)
    code, out, err = run(capsys, "log", "verify", str(segment))
    assert code == 1, out + err
    assert "Kafka could never have created" in out and "\x1b" not in out and "\u202e" not in out
    code, out, err = run(capsys, "replay", str(segment.parent), "--no-verify")
    assert "WARNING: a topic Kafka could never have created" in out and "\x1b" not in out and "\u202e" not in out, err
    code, out, err = run(capsys, "cluster", "import", str(d / "node-1"), str(tmp_path / "imported"))
    assert code == 0, err
    assert "WARNING: a topic Kafka could never have created" in out and "\x1b" not in out, out
