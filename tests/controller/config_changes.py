"""Shared by the property tests of config resources the controller judges whole (client-metrics
subscriptions, groups): random batches of changes, sent one after the other, each of which the
controller must take exactly when the check of what it would leave passes."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from hypothesis import strategies as st

from kraftsim.controller.configs import (
    OP_DELETE, OP_SET, AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest,
    incremental_alter_configs,
)
from tests.controller.cluster_support import RuleCluster

def change_batches(values: Mapping[str, Sequence[str]]) -> st.SearchStrategy[list[tuple[AlterableConfig, ...]]]:
    """Up to five batches of up to three changes: per name, one of its `values` or a delete."""
    names = sorted(values)
    one = st.tuples(st.sampled_from(names), st.integers(0, len(max(values.values(), key=len))))

    def ops(change: list[tuple[str, int]]) -> tuple[AlterableConfig, ...]:
        return tuple(AlterableConfig(n, OP_DELETE) if i == len(values[n]) else
                     AlterableConfig(n, OP_SET, values[n][i % len(values[n])]) for n, i in dict(change).items())

    return st.lists(st.lists(one, min_size=1, max_size=3).map(ops), min_size=1, max_size=5)


def left_by(held: Mapping[str, str], ops: Sequence[AlterableConfig]) -> dict[str, str]:
    """The configs `ops` leave a resource holding `held` with."""
    after = dict(held)
    for op in ops:
        if op.config_operation == OP_DELETE:
            after.pop(op.name, None)
        else:
            after[op.name] = op.value
    return after


def assert_each_change_taken_as_checked(cluster: RuleCluster, resource_type: int, name: str,
                                        batches: Sequence[Sequence[AlterableConfig]],
                                        check: Callable[[dict[str, str]], Any]) -> None:
    """Send each batch to the controller: its answer is `check`'s verdict (`.error`: code, message,
    ok) on what the batch would leave, and the resource holds that exactly when the verdict is no
    error."""
    model: dict[str, str] = {}
    for ops in batches:
        after = left_by(model, ops)
        expected = check(after).error
        request = IncrementalAlterConfigsRequest((AlterConfigsResource(resource_type, name, tuple(ops)),))
        answer = cluster.run(incremental_alter_configs, request).response.responses[0]
        assert (answer.error_code, answer.error_message) == (expected.code, expected.message)
        if expected.ok:
            model = after
        assert dict(cluster.image.configs.config(resource_type, name)) == model
