"""Hostile bytes: parse_request raises only FrameError or UnsupportedRequest, whatever it
is given, and the frame splitter enforces Kafka's size rules however the bytes arrive."""

from __future__ import annotations

import asyncio
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftsim.protocol import fastpath
from kraftsim.wire import (
    DEFAULT_MAX_FRAME,
    FrameError,
    FrameSplitter,
    ParsedRequest,
    UnsupportedRequest,
    encode_request,
    frame,
    parse_request,
    read_frame,
)
from kraftsim.wire.codec import default_catalog
from tests.wire.test_codec_roundtrip import body_strategy

CATALOG = default_catalog()


def parse_or_refuse(data: bytes) -> ParsedRequest | Exception:
    try:
        return parse_request(data)
    except (FrameError, UnsupportedRequest) as e:
        return e


# ---------------------------------------------------------------------------- parse_request fuzz


@settings(max_examples=3000, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes(data: bytes) -> None:
    parse_or_refuse(data)


@st.composite
def valid_frames(draw: st.DrawFn) -> bytes:
    api = draw(st.sampled_from(sorted(CATALOG.apis.values(), key=lambda a: a.key)))
    lo, hi = api.request.versions
    version = draw(st.integers(lo, hi))
    body = draw(body_strategy(api.request.schema.body, version))
    client_id = draw(st.none() | st.text(max_size=6))
    return encode_request(api.key, version, draw(st.integers(-(2**31), 2**31 - 1)), body, client_id=client_id)[4:]


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(valid_frames()))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "set"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=5))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 4))]
        elif kind == "set" and data:
            data[pos] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
    return bytes(data)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_frames())
def test_mutated_valid_frames(data: bytes) -> None:
    result = parse_or_refuse(data)
    if isinstance(result, ParsedRequest):
        assert isinstance(result.body, dict)


def _outcome(data: bytes) -> object:
    result = parse_or_refuse(data)
    return result if isinstance(result, ParsedRequest) else (type(result), str(result))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_frames())
def test_c_fast_path_and_python_agree_on_mutated_frames(data: bytes) -> None:
    """Same result or no result: the C decoders give the generated Python code's answer or error."""
    fast = _outcome(data)
    with fastpath.pure_python():
        assert _outcome(data) == fast


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_frames(), st.data())
def test_every_truncation_of_a_valid_frame(data: bytes, draw: st.DataObject) -> None:
    cut = draw.draw(st.integers(0, len(data)))
    parse_or_refuse(data[:cut])


def test_huge_counts_are_refused_without_allocating():
    # Metadata v12 with a topic array claiming 2**31 - 2 entries, then nothing.
    header = struct.pack(">hhih", 3, 12, 1, 0) + b"\x00"
    for count in (b"\xff\xff\xff\xff\x07", b"\xfe\xff\xff\xff\x0f"):
        with pytest.raises(FrameError):
            parse_request(header + count)
    # The same in a non-flexible version: an int32 count.
    with pytest.raises(FrameError):
        parse_request(struct.pack(">hhih", 3, 8, 1, 0) + struct.pack(">i", 2**31 - 1))


# ---------------------------------------------------------------------------- the frame splitter


def test_splitter_refuses_negative_and_oversized_sizes():
    with pytest.raises(FrameError, match=r"Invalid receive \(size = -1\)"):
        FrameSplitter().feed(struct.pack(">i", -1))
    with pytest.raises(FrameError, match=r"Invalid receive \(size = 104857601 larger than 104857600\)"):
        FrameSplitter().feed(struct.pack(">i", DEFAULT_MAX_FRAME + 1))
    splitter = FrameSplitter(max_size=10)
    with pytest.raises(FrameError, match="larger than 10"):
        splitter.feed(struct.pack(">i", 11) + b"x" * 11)
    with pytest.raises(FrameError):  # the stream has lost its boundaries: refused from now on
        splitter.feed(frame(b"ok"))


def test_splitter_holds_no_more_than_the_frame_being_read():
    splitter = FrameSplitter()
    assert splitter.feed(struct.pack(">i", DEFAULT_MAX_FRAME)) == []  # a maximal size is accepted
    assert splitter.feed(b"abc") == [] and splitter.pending == 3  # nothing allocated ahead of the data


def test_splitter_truncated_stream_is_not_at_a_boundary():
    splitter = FrameSplitter()
    assert splitter.feed(frame(b"hello")[:7]) == []
    assert not splitter.at_boundary()
    assert splitter.feed(b"lo") == [b"hello"] and splitter.at_boundary()


@settings(max_examples=500, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=8), st.data())
def test_splitter_any_split_of_the_stream_gives_the_same_frames(payloads: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    splitter = FrameSplitter(max_size=64)
    got: list[bytes] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        got += splitter.feed(stream[start:cut])
        start = cut
    assert got == payloads and splitter.at_boundary()


# ---------------------------------------------------------------------------- read_frame (asyncio)


def _read_all(data: bytes, max_size: int = DEFAULT_MAX_FRAME) -> list[bytes | None] | Exception:
    async def run() -> list[bytes | None] | Exception:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        out: list[bytes | None] = []
        try:
            while True:
                got = await read_frame(reader, max_size)
                out.append(got)
                if got is None:
                    return out
        except (FrameError, asyncio.IncompleteReadError) as e:
            return e

    return asyncio.run(run())


def test_read_frame_clean_end_truncation_and_bad_sizes():
    assert _read_all(frame(b"a") + frame(b"")) == [b"a", b"", None]
    assert isinstance(_read_all(frame(b"abc")[:5]), asyncio.IncompleteReadError)  # vanished mid-frame
    assert isinstance(_read_all(b"\x00\x00"), asyncio.IncompleteReadError)  # vanished mid-size
    bad = _read_all(struct.pack(">i", -5))
    assert isinstance(bad, FrameError) and "size = -5" in str(bad)
    huge = _read_all(struct.pack(">i", 2**31 - 1), max_size=1000)
    assert isinstance(huge, FrameError) and "larger than 1000" in str(huge)
