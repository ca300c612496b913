"""`kraftsim serve` answers ListGroups and ListTransactions as a broker whose coordinators hold
nothing (a served cluster never serves a request that makes a group or a transaction): no
error, nothing listed, whatever the version and filters; a transaction listing Kafka would
judge by state names or a pattern is not carried out."""

from __future__ import annotations

import pytest

import kraftsim
from tests.wire.client import rpc

LIST_GROUPS, LIST_TRANSACTIONS = 16, 66


@pytest.mark.parametrize("version", range(6))
def test_every_version_of_list_groups_lists_no_group(version):
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0") as k:
        body = {"StatesFilter": ["Stable"] if version >= 4 else [], "TypesFilter": ["consumer"] if version >= 5 else []}
        answer = rpc(k.address(2), LIST_GROUPS, version, body)
        assert answer is not None and (answer[1]["ErrorCode"], answer[1]["Groups"]) == (0, [])
        # a controller listener does not serve it (Kafka's controllers list no ListGroups)
        assert rpc(k.address(1, "controller"), LIST_GROUPS, version, body) is None


def test_list_transactions_lists_none_and_leaves_what_it_would_judge(capsys):
    with kraftsim.serve(combined=1, release="4.4.0") as k:
        for version in range(3):
            answer = rpc(k.address(1), LIST_TRANSACTIONS, version, {"StateFilters": [], "ProducerIdFilters": [7],
                                                                    "DurationFilter": 1000 if version else -1})
            assert answer is not None
            assert (answer[1]["ErrorCode"], answer[1]["UnknownStateFilters"], answer[1]["TransactionStates"]) == \
                (0, [], [])
        capsys.readouterr()
        assert rpc(k.address(1), LIST_TRANSACTIONS, 0, {"StateFilters": ["Ongoing"], "ProducerIdFilters": []}) is None
        assert rpc(k.address(1), LIST_TRANSACTIONS, 2, {"StateFilters": [], "ProducerIdFilters": [],
                                                        "TransactionalIdPattern": "app-.*"}) is None
        err = capsys.readouterr().err
    assert "ListTransactions with state filters is not carried out" in err
