"""Kafka's protocol errors as the controller returns them: a code, its name, a message.

The code table is data (`data/api_errors.toml`). An `ApiError` is a value a controller
operation returns (inside a `ControllerResult`), not an exception a caller must catch:
Kafka's controller answers a refused request, it does not crash.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources

import msgspec


@cache
def error_codes() -> dict[str, int]:
    """Error name → Kafka protocol error code."""
    text = resources.files("kraftsim.controller").joinpath("data/api_errors.toml").read_text("utf-8")
    return dict(tomllib.loads(text)["codes"])


class ApiError(msgspec.Struct, frozen=True):
    """A Kafka error: its name (e.g. INVALID_UPDATE_VERSION), its code, and the message text."""

    name: str
    message: str | None = None

    def __post_init__(self) -> None:
        if self.name not in error_codes():
            raise ValueError(f"unknown Kafka error name {self.name!r}")

    @property
    def code(self) -> int:
        return error_codes()[self.name]

    @property
    def ok(self) -> bool:
        return self.name == "NONE"

    def __str__(self) -> str:
        return self.name if self.message is None else f"{self.name}: {self.message}"


NONE = ApiError("NONE")


#: Kafka's default texts (Errors.message()) for errors the controller returns without one.
DEFAULT_MESSAGES = {
    "UNKNOWN_TOPIC_ID": "This server does not host this topic ID.",
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "ELECTION_NOT_NEEDED": "Leader election not needed for topic partition.",
    "PREFERRED_LEADER_NOT_AVAILABLE": "The preferred leader was not available.",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": "Eligible topic partition leaders are not available.",
    "UNKNOWN_SERVER_ERROR": "The server experienced an unexpected error when processing the request.",
    "REQUEST_TIMED_OUT": "The request timed out.",
    "NOT_CONTROLLER": "This is not the correct controller for this cluster.",
    "INVALID_REQUEST": "This most likely occurs because of a request being malformed by the client library or the "
                       "message was sent to an incompatible broker. See the broker logs for more details.",
    "POLICY_VIOLATION": "Request parameters do not satisfy the configured policy.",
    "NO_REASSIGNMENT_IN_PROGRESS": "No partition reassignment is in progress.",
}

#: The exception an admin client raises for an error (Errors' exception classes), as Kafka's
#: tools print it: `org.apache.kafka.common.errors.<class>: <text>`.
EXCEPTION_CLASSES = {
    "UNKNOWN_SERVER_ERROR": "UnknownServerException",
    "UNKNOWN_TOPIC_OR_PARTITION": "UnknownTopicOrPartitionException",
    "REQUEST_TIMED_OUT": "TimeoutException",
    "NOT_CONTROLLER": "NotControllerException",
    "INVALID_REQUEST": "InvalidRequestException",
    "POLICY_VIOLATION": "PolicyViolationException",
    "UNSUPPORTED_VERSION": "UnsupportedVersionException",
    "NOT_LEADER_OR_FOLLOWER": "NotLeaderOrFollowerException",
    "PREFERRED_LEADER_NOT_AVAILABLE": "PreferredLeaderNotAvailableException",
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": "EligibleLeadersNotAvailableException",
    "ELECTION_NOT_NEEDED": "ElectionNotNeededException",
    "DUPLICATE_VOTER": "DuplicateVoterException",
    "VOTER_NOT_FOUND": "VoterNotFoundException",
    "NO_REASSIGNMENT_IN_PROGRESS": "NoReassignmentInProgressException",
    "INVALID_REPLICA_ASSIGNMENT": "InvalidReplicaAssignmentException",
    "INVALID_REPLICATION_FACTOR": "InvalidReplicationFactorException",
}


def exception_text(name: str, message: str | None = None) -> str:
    """The exception for error `name` as a Kafka tool prints it (Throwable.toString): its class
    and the message, else the error's default text (ApiException for an error not listed)."""
    text = message if message is not None else DEFAULT_MESSAGES.get(name)
    cls = f"org.apache.kafka.common.errors.{EXCEPTION_CLASSES.get(name, 'ApiException')}"
    return cls if text is None else f"{cls}: {text}"


def default_error(name: str) -> ApiError:
    """Kafka's `new ApiError(error)`: the error with its default text."""
    return ApiError(name, DEFAULT_MESSAGES.get(name))



def code_text(code: int, message: str | None = None) -> str:
    """What a client shows for an error answered with `code` and `message`: the message, else
    Kafka's default text of the error, else its name."""
    if message:
        return message
    name = next((n for n, c in error_codes().items() if c == code), f"error code {code}")
    return DEFAULT_MESSAGES.get(name, name)
