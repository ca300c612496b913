"""Errors kraftsim raises for bad input, each carrying Kafka's text where Kafka has one.

Every error a user's file can cause derives from KraftsimError, so the CLI can print it
as one clear line instead of a traceback.
"""

from __future__ import annotations


class KraftsimError(Exception):
    """Base of every error caused by input (files, flags, catalogs), not by a bug."""


class UsageError(KraftsimError):
    """A command line or input the command cannot work with (the CLI exits 2, as for usage errors)."""


class SchemaError(KraftsimError):
    """A record schema file is malformed or inconsistent."""


class MetadataParseException(KraftsimError):
    """A metadata record's frame or body could not be read (Kafka's MetadataParseException)."""


class UnsupportedVersionException(KraftsimError):
    """A message cannot be written at the requested version (Kafka's exception of that name)."""


class CorruptRecordException(KraftsimError):
    """A record batch fails its size, magic or CRC checks (Kafka's CorruptRecordException)."""


class UnsupportedCompressionError(KraftsimError):
    """A batch uses a compression codec this installation cannot read."""


class LogFileError(KraftsimError):
    """A problem in a file, located by path and batch base offset.

    Wraps the underlying cause so that the message always says where the problem is.
    """

    def __init__(self, path: str, base_offset: int | None, cause: str, position: int | None = None):
        self.path = path
        self.base_offset = base_offset
        self.cause = cause
        self.position = position
        where = path
        if base_offset is not None:
            where += f": batch at offset {base_offset}"
        if position is not None:
            where += f" (file position {position})"
        super().__init__(f"{where}: {cause}")


class ClusterBusyError(KraftsimError):
    """Another process holds a cluster directory's lock and did not let go in time (the CLI
    exits 75, EX_TEMPFAIL: trying again later may succeed)."""
