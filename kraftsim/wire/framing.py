"""Size-prefixed frames on a byte stream: Kafka's `int32 size | size bytes`, both directions.

A server reads a 4-byte size, checks it against `socket.request.max.bytes` before reading
anything more (so a client cannot make it allocate a huge buffer), then reads exactly that
many bytes. The checks and their texts are Kafka's NetworkReceive ones, so a log line reads
as the real broker's would. `FrameSplitter` does the same over bytes fed in any pieces (for
tests and for callers that own the socket); `read_frame` does it over an asyncio
StreamReader. Neither holds more than the frame being read.
"""

from __future__ import annotations

import asyncio
import struct

from kraftsim.errors import KraftsimError

#: Kafka's default `socket.request.max.bytes` (100 MiB).
DEFAULT_MAX_FRAME = 104_857_600

_SIZE = struct.Struct(">i")


class FrameError(KraftsimError):
    """A frame or its request header cannot be read: the connection is closed, as Kafka does.

    `api_key`, `api_version` and `correlation_id` are set when they could be read before
    the problem (a request body that does not parse), None otherwise.
    """

    def __init__(self, message: str, api_key: int | None = None, api_version: int | None = None,
                 correlation_id: int | None = None):
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


def check_frame_size(size: int, max_size: int = DEFAULT_MAX_FRAME) -> int:
    """The size itself when a frame of that size may be read; FrameError otherwise."""
    if size < 0:
        raise FrameError(f"Invalid receive (size = {size})")
    if size > max_size:
        raise FrameError(f"Invalid receive (size = {size} larger than {max_size})")
    return size


def frame(payload: bytes | bytearray) -> bytes:
    """A payload with its 4-byte size in front."""
    return _SIZE.pack(len(payload)) + payload


class FrameSplitter:
    """Splits a byte stream fed in arbitrary pieces into frames (sizes checked, prefixes removed).

    After a FrameError the stream is unusable (its frame boundaries are lost), as for Kafka,
    which closes the connection; every later `feed` raises the same error.
    """

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME):
        self.max_size = max_size
        self._buf = bytearray()
        self._need: int | None = None  # the payload size of the frame being read, once known
        self._error: FrameError | None = None

    @property
    def pending(self) -> int:
        """Bytes held of the frame not yet complete."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """The frames that `data` completes, in order."""
        if self._error is not None:
            raise self._error
        frames: list[bytes] = []
        view = memoryview(data)
        while view:
            if self._need is None:
                take = min(4 - len(self._buf), len(view))
                self._buf += view[:take]
                view = view[take:]
                if len(self._buf) < 4:
                    break
                (size,) = _SIZE.unpack(self._buf)
                self._buf.clear()
                try:
                    self._need = check_frame_size(size, self.max_size)
                except FrameError as e:
                    self._error = e
                    raise
            take = min(self._need - len(self._buf), len(view))
            self._buf += view[:take]
            view = view[take:]
            if len(self._buf) == self._need:
                frames.append(bytes(self._buf))
                self._buf.clear()
                self._need = None
        return frames

    def at_boundary(self) -> bool:
        """True when no frame is partly read (a stream may end here cleanly)."""
        return self._need is None and not self._buf


async def read_frame(reader: asyncio.StreamReader, max_size: int = DEFAULT_MAX_FRAME) -> bytes | None:
    """The next frame's payload; None when the stream ends cleanly between frames.

    Raises FrameError for a bad size, and asyncio.IncompleteReadError when the stream ends
    inside a frame (the peer went away mid-request).
    """
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise
    (size,) = _SIZE.unpack(prefix)
    return await reader.readexactly(check_frame_size(size, max_size))
