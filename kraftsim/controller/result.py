"""ControllerResult: what a controller operation decides — the records to commit and the answer.

Every controller operation is a function of the controller's current state and a request
that returns a ControllerResult and changes nothing by itself. The QuorumController then
appends the records to the metadata log (in one batch when `atomic`), replays them into
its own state, and hands the response back. This is Kafka's own split between deciding
and committing, and it keeps every rule testable without a log.

Records are built with `payload` (a record at a version the rule names, as Kafka writes
most records) or `controller_record` (at the highest version the metadata.version allows).
"""

from __future__ import annotations

from typing import Any, Sequence

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.protocol.entries import Payload
from kraftsim.protocol.registry import Registry
from kraftsim.versions import Catalog

#: Kafka's MAX_RECORDS_PER_USER_OP: the most records one user request may make, from 3.5 on
#: (policy `user_op_limits`); more is BoundedListTooLongException in Kafka's code.
MAX_RECORDS_PER_USER_OP = 10_000
#: What Kafka's controller answers for a whole request whose records overflow that limit.
TOO_MANY_RECORDS = ApiError("POLICY_VIOLATION", "Unable to perform excessively large batch operation.")
#: Where no release limit applies (3.3, 3.4), the most partitions kraftsim makes for one topic of
#: a request: Kafka's controller fails over on a batch far smaller (not modelled); this bounds
#: the work a hostile request can ask for. Beyond it the topic is UNKNOWN_SERVER_ERROR.
UNBOUNDED_PARTITIONS_CAP = 1_000_000

#: What a rule answers when the image has no metadata.version (Kafka's metadataVersionOrThrow).
NO_METADATA_VERSION = ApiError("UNKNOWN_SERVER_ERROR", "Unknown metadata version for FeatureControlManager")


class ControllerResult(msgspec.Struct, frozen=True):
    """Records to commit (possibly none) and the response to return once they are committed."""

    records: tuple[Payload, ...] = ()
    response: Any = None
    atomic: bool = True
    error: ApiError = NONE

    @property
    def ok(self) -> bool:
        return self.error.ok


def refused(error: ApiError, response: object = None) -> ControllerResult:
    """A result that writes nothing and answers with `error`."""
    return ControllerResult((), response, True, error)


def accepted(records: Sequence[Payload], response: object = None, *, atomic: bool = True) -> ControllerResult:
    return ControllerResult(tuple(records), response, atomic, NONE)


#: `tuple.__new__`: `make_payload(Payload, (record_type, version, message))` is the same Payload
#: as `Payload(record_type, version, message)`, made without the named tuple's Python-level
#: constructor, which costs about as much as the message itself. For rules that write a
#: record per partition (a broker event or a CreateTopics request: up to hundreds of thousands).
make_payload = tuple.__new__


def payload(reg: Registry, record: str, version: int, /, **fields: object) -> Payload:
    """A `record` message of `reg` with `fields`, to write at record version `version` (a message
    field named `version`, as control records have, goes in `fields`)."""
    rt = reg[record]
    return Payload(rt, version, rt.new(**fields))


def controller_record(catalog: Catalog, metadata_version: int, record_type: str, /, **fields: object) -> Payload:
    """A record to write at `metadata_version`, at the highest record version it allows."""
    return payload(catalog.record_registry(), record_type, catalog.record_version(record_type, metadata_version),
                   **fields)
