"""CRC-32C, the switches (KRAFTSIM_PURE_PYTHON, pure_python()), and the hooks being wired."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import google_crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftsim.errors import CorruptRecordException
from kraftsim.protocol import batch as batch_module
from kraftsim.protocol import entries as entries_module
from kraftsim.protocol import fastpath
from kraftsim.protocol import batch_io
from kraftsim.protocol.batch import parse_batch
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import default_registry

from ._support import REPO, needs_speedups, same

REGISTRY = default_registry()


@needs_speedups
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300), offset=st.integers(0, 7))
def test_crc32c_matches_google_crc32c(data, offset):
    view = memoryview(b"\x00" * offset + data)[offset:]
    expected = google_crc32c.value(data)
    assert fastpath.crc32c(view) == expected
    assert fastpath._c.crc32c_software(data) == expected


@needs_speedups
def test_crc32c_large_and_known_value():
    assert fastpath.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    big = os.urandom(1 << 20) + b"tail"
    assert fastpath.crc32c(big) == google_crc32c.value(big) == fastpath._c.crc32c_software(big)


@needs_speedups
@pytest.mark.parametrize("records", [1, 300, 3000])  # (the last batches past the size whose CRC is taken over a view)
def test_a_batch_whose_crc_is_checked_over_a_view_fails_and_passes_as_one_checked_over_a_copy(records, monkeypatch):
    rt = REGISTRY["NoOpRecord"]
    raw = batch_io.encode_data_batch(0, [Payload(rt, 0, rt.new())] * records, epoch=3, timestamp=5)
    assert (len(raw) >= batch_module._VIEW_FROM) == (records == 3000)
    flipped = bytearray(raw)
    flipped[-2] ^= 0x10
    outcomes = []
    for view_from in (batch_module._VIEW_FROM, len(raw) + 1):  # (the second: every batch over a copy)
        monkeypatch.setattr(batch_module, "_VIEW_FROM", view_from)
        assert parse_batch(raw).crc == google_crc32c.value(raw[21:])
        with pytest.raises(CorruptRecordException) as caught:
            parse_batch(bytes(flipped))
        outcomes.append(str(caught.value))
    assert outcomes[0] == outcomes[1] and "Record is corrupt" in outcomes[0]


@needs_speedups
def test_pure_python_context_switches_everything_off_and_back():
    assert fastpath.ENABLED
    rt = REGISTRY["NoOpRecord"]
    raw = batch_io.encode_data_batch(0, [Payload(rt, 0, rt.new())], epoch=0, timestamp=0)
    batch = parse_batch(raw)
    with fastpath.pure_python():
        assert not fastpath.ENABLED
        assert fastpath.try_decode_batch(batch, REGISTRY) is None
        assert fastpath.try_encode_data_batch(0, [], 0, 0) is None
        assert fastpath.try_parse_records(raw[61:], 1) is None
        assert fastpath.info()["enabled"] == 0
        pure = entries_module.decode_batch(batch, REGISTRY)
    assert fastpath.ENABLED
    fast = entries_module.decode_batch(batch, REGISTRY)
    same(fast, pure, "toggle")


@needs_speedups
def test_hooks_route_through_c():
    """batch.parse_records and entries.decode_batch/encode_data_batch use the C path when it is on.

    The C path untracks the tuples it builds from the cycle collector (see _speedups.c);
    the pure path's tuples are tracked, which tells the two apart.
    """
    rt = REGISTRY["PartitionRecord"]
    msg = rt.new(partition_id=1, replicas=[1, 2, 3], isr=[1, 2])
    raw = entries_module.encode_data_batch(0, [Payload(rt, 2, msg)], epoch=1, timestamp=2)
    with fastpath.pure_python():
        assert entries_module.encode_data_batch(0, [Payload(rt, 2, msg)], epoch=1, timestamp=2) == raw
    batch = parse_batch(raw)
    fast_entries = entries_module.decode_batch(batch, REGISTRY)
    fast_records = batch_module.parse_records(raw[61:], 1)
    assert not gc.is_tracked(fast_entries[0]) and not gc.is_tracked(fast_entries[0].message.replicas)
    assert not gc.is_tracked(fast_records[0])
    with fastpath.pure_python():
        pure_entries = entries_module.decode_batch(batch, REGISTRY)
    assert gc.is_tracked(pure_entries[0])
    same(fast_entries, pure_entries, "hooked")


@needs_speedups
def test_untrack_off_gives_the_same_values():
    rt = REGISTRY["PartitionRecord"]
    raw = batch_io.encode_data_batch(0, [Payload(rt, 2, rt.new(replicas=[1]))], epoch=1, timestamp=2)
    fastpath._c.configure(untrack=False)
    try:
        entries = batch_io.read_log_entries(raw, REGISTRY)[0]
        assert gc.is_tracked(entries[0])
    finally:
        fastpath._c.configure(untrack=True)
    with fastpath.pure_python():
        same(entries, entries_module.decode_batch(parse_batch(raw), REGISTRY), "tracked")


def test_env_var_forces_pure_python():
    code = (
        "from kraftsim.protocol import batch_io as b, fastpath as f, entries as e\n"
        "from kraftsim.protocol.registry import default_registry\n"
        "from kraftsim.protocol.batch import parse_batch\n"
        "r = default_registry(); rt = r['NoOpRecord']\n"
        "raw = e.encode_data_batch(0, [e.Payload(rt, 0, rt.new())], epoch=0, timestamp=0)\n"
        "assert f.try_decode_batch(parse_batch(raw), r) is None\n"
        "assert len(b.read_log_entries(raw, r)[0]) == 1\n"
        "print(f.HAVE_SPEEDUPS, f.FORCED_PURE, f.ENABLED)\n"
    )
    env = dict(os.environ, KRAFTSIM_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(fastpath.HAVE_SPEEDUPS), "True", "False"]
    env["KRAFTSIM_PURE_PYTHON"] = "0"
    out = subprocess.run([sys.executable, "-c", code.replace("is None", "is not None")], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if fastpath.HAVE_SPEEDUPS:
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["True", "False", "True"]


@needs_speedups
def test_programs_read_member_slots_directly():
    """Every shipped record's program reads fields from msgspec member slots (no getattr)."""
    for rt in REGISTRY.by_name.values():
        for version in range(rt.schema.versions.lo, rt.schema.versions.hi + 1):
            assert fastpath.program_for_codec(rt.codec, version).direct_slots, rt.name
    info = fastpath.info()
    assert info["uuid_direct"] and info["logentry_direct"] and info["record_direct"]


@needs_speedups
def test_wrappers_keep_the_pure_function():
    rt = REGISTRY["TopicRecord"]
    dec = fastpath.wrap_decoder(rt.codec, 0, rt.codec.decoder(0))
    assert dec.pure is rt.codec.decoder(0) or isinstance(rt.codec.decoder(0), fastpath._c.FastDecoder)
    with pytest.raises(TypeError):
        fastpath._c.Program(("not a class",) * 7)


def test_speedups_built_where_required():
    """CI sets KRAFTSIM_REQUIRE_SPEEDUPS=1: a C extension that silently failed to build (the
    build is optional, so pip says nothing) would otherwise skip every fast-path test and
    leave the whole suite running on the pure-Python codec."""
    if os.environ.get("KRAFTSIM_REQUIRE_SPEEDUPS", "") in ("", "0"):
        pytest.skip("KRAFTSIM_REQUIRE_SPEEDUPS is not set")
    assert fastpath.HAVE_SPEEDUPS, "kraftsim.protocol._speedups did not build: is a C compiler installed?"
    if not fastpath.FORCED_PURE:
        assert fastpath.ENABLED
