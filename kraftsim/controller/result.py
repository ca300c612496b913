"""ControllerResult: what a controller operation decides — the records to commit and the answer.

Every controller operation is a function of the controller's current state and a request
that returns a ControllerResult and changes nothing by itself. The QuorumController then
appends the records to the metadata log (in one batch when `atomic`), replays them into
its own state, and hands the response back. This is Kafka's own split between deciding
and committing, and it keeps every rule testable without a log.
"""

from __future__ import annotations

from typing import Any, Generic, Sequence, TypeVar

import msgspec

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.protocol.entries import Payload

R = TypeVar("R")


class ControllerResult(msgspec.Struct, Generic[R], frozen=True):
    """Records to commit (possibly none) and the response to return once they are committed."""

    records: tuple[Payload, ...] = ()
    response: Any = None
    atomic: bool = True
    error: ApiError = NONE

    @property
    def ok(self) -> bool:
        return self.error.ok


def refused(error: ApiError, response: Any = None) -> ControllerResult:
    """A result that writes nothing and answers with `error`."""
    return ControllerResult((), response, True, error)


def accepted(records: Sequence[Payload], response: Any = None, *, atomic: bool = True) -> ControllerResult:
    return ControllerResult(tuple(records), response, atomic, NONE)
