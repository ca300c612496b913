"""ListGroups and ListTransactions (`kafka-consumer-groups --list`, `kafka-transactions list`),
answered as a broker whose group and transaction coordinators hold nothing answers them.

A served cluster carries metadata only: it serves no request that makes a group or a
transaction (JoinGroup, ConsumerGroupHeartbeat, OffsetCommit, InitProducerId, ...), and none
of `__consumer_offsets` and `__transaction_state` exists, so no coordinator partition is
loading. Kafka's coordinators then answer every listing with no error and nothing listed,
whatever its state or type filters. A transaction listing Kafka would judge further is not
carried out rather than answered wrongly: state names (which it checks against its own
TransactionState names, per release) and a transactional-id pattern (a regular expression it
compiles with RE2/J, whose refusal text kraftsim cannot reproduce).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftsim.wire.handlers import Body, Handler, NotCarriedOut
from kraftsim.wire.served import Listener, ServedCluster

LIST_GROUPS_KEY, LIST_TRANSACTIONS_KEY = 16, 66


def list_groups(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    return {"ErrorCode": 0, "Groups": []}


def list_transactions(served: ServedCluster, listener: Listener, version: int, body: Mapping[str, Any]) -> Body:
    if body.get("StateFilters"):
        raise NotCarriedOut("ListTransactions with state filters")
    if body.get("TransactionalIdPattern"):
        raise NotCarriedOut("ListTransactions with a transactional-id pattern")
    return {"ErrorCode": 0, "UnknownStateFilters": [], "TransactionStates": []}


HANDLERS: dict[int, Handler] = {LIST_GROUPS_KEY: list_groups, LIST_TRANSACTIONS_KEY: list_transactions}
