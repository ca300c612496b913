"""One op carried out on a Simulation: the only place an op meets the simulator.

The scenario runner, the state machine's steps (`kraftsim.testing.steps`) and the sweeps'
fault schedules (which are scenario steps) all come here, so an op prints the same lines
whoever runs it. A refusal raises SimError or KraftsimError with Kafka's text.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping, Sequence

import msgspec

from kraftsim.scenario.ops import (
    AddController,
    AddNode,
    AlterBrokerConfig,
    AlterClientMetrics,
    AlterGroupConfig,
    AlterClientQuotas,
    AlterScramCredentials,
    AlterTopicConfig,
    CreateAcl,
    DeleteAcls,
    CreateTopics,
    CreatePartitions,
    DeleteTopics,
    DiskFault,
    ElectLeaders,
    FeaturesChange,
    FeaturesDisable,
    FeaturesUpgrade,
    Heal,
    NodesStep,
    Crash,
    ReassignPartitions,
    Partition,
    RemoveController,
    Roll,
    Run,
    Snapshot,
    Start,
    StepBase,
    UnregisterBroker,
    UnregisterController,
    Wait,
)
from kraftsim.sim import (ReassignTarget, SimError, Simulation, TopicsRefused, leader_election, reassign_partitions,
                          tool_note)

#: The most records Kafka's controller makes for one request (MAX_RECORDS_PER_USER_OP, from 3.5).
RECORDS_PER_REQUEST = 10_000


def topic_requests(sim: Simulation, count: int, partitions: int, replication_factor: int | None,
                   prefix: str = "topic-", names: Sequence[str] | None = None,
                   configs: Mapping[str, str] | None = None,
                   assignments: Sequence[Sequence[int]] | None = None, existing_ok: bool = False) -> Iterator[list[str]]:
    """Create `count` topics `<prefix><i>` (or the topics `names`) in requests of at most
    RECORDS_PER_REQUEST records (a TopicRecord and a PartitionRecord per partition each), as a
    script calling kafka-topics stays under the controller's limits ("Unable to perform
    excessively large batch operation.", and "Excessively large number of partitions per
    request." from 3.9.1; a single topic larger than that is still refused): the names each
    request created, once it is saved. `existing_ok`: named topics that exist already are
    passed over (Simulation.create_topics)."""
    if assignments is not None:
        partitions = len(assignments)
    per_request = max(1, RECORDS_PER_REQUEST // (partitions + 1))
    if names is not None:
        for at in range(0, len(names), per_request):
            chunk = list(names[at:at + per_request])
            yield sim.create_topics(len(chunk), partitions, replication_factor, names=chunk, configs=configs,
                                    assignments=assignments, existing_ok=existing_ok)
        return
    done = 0
    while done < count:
        created = sim.create_topics(min(per_request, count - done), partitions, replication_factor, prefix=prefix,
                                    configs=configs, assignments=assignments)
        done += len(created)
        yield created


def apply(sim: Simulation, op: StepBase) -> list[str]:
    """Carry out `op` as it starts now; returns what it printed."""
    started, said = starting(sim, op)
    return said + carry_out(sim, started)


def starting(sim: Simulation, op: StepBase) -> tuple[StepBase, list[str]]:
    """`op` as it starts now, and what is said before it runs. kafka-features ops get the
    release of the tool that answers (the newest one running, unless the op names one) and
    say whose it is when there was a choice, whether the op then succeeds or not; an op on
    "leader" acts on the active controller of this moment."""
    if isinstance(op, (FeaturesChange, FeaturesDisable)):
        release = op.tool_release or sim.tool_release()
        said = tool_note(release, sim.node_summaries(), op.tool_release is not None)
        return msgspec.structs.replace(op, tool_release=release), [said] if said else []
    if getattr(op, "nodes", None) == "leader":
        return msgspec.structs.replace(op, nodes=sim.select("leader")), []
    return op, []


def carry_out(sim: Simulation, op: StepBase) -> list[str]:
    """Carry out an op as `starting` gave it; returns what it printed."""
    if isinstance(op, CreateTopics):
        said: list[str] = []
        try:
            for created in topic_requests(sim, op.count, op.partitions, op.replication_factor, names=op.names,
                                          configs=op.configs, assignments=op.assignments):
                said += [f"Created topic {n}." for n in created]
        except TopicsRefused as e:
            e.output = said + [f"Created topic {n}." for n in e.created]  # (committed all the same)
            raise
        return said
    if isinstance(op, DeleteTopics):
        sim.delete_topics(op.names)
        return [f"Deleted topic {n}." for n in op.names]
    if isinstance(op, CreatePartitions):
        sim.create_partitions(op.names, op.count, op.assignments)
        return []  # (kafka-topics --alter prints nothing when it succeeds)
    if isinstance(op, Roll):
        sim.roll(op.release, op.nodes)
        return []
    if isinstance(op, AddNode):
        nid = sim.add_node(op.role, op.release, op.id)
        return [f"Node {nid} ({op.role}, Kafka {op.release}) joined."]
    if isinstance(op, FeaturesChange):
        return sim.features("upgrade" if isinstance(op, FeaturesUpgrade) else "downgrade", metadata=op.metadata,
                            release_version=op.release_version, features=op.features, unsafe=op.unsafe,
                            dry_run=op.dry_run, tool_release=op.tool_release)
    if isinstance(op, FeaturesDisable):
        return sim.features("disable", features=list(op.features), dry_run=op.dry_run, tool_release=op.tool_release)
    if isinstance(op, NodesStep):
        (sim.crash if isinstance(op, Crash) else sim.stop)(op.nodes)
        return []
    if isinstance(op, Start):
        sim.start(op.nodes, op.release)
        return []
    if isinstance(op, Partition):
        sim.partition(op.groups)
        return []
    if isinstance(op, Heal):
        sim.heal()
        return []
    if isinstance(op, DiskFault):
        sim.disk_fault(op.nodes, op.kind)
        return []
    if isinstance(op, Snapshot):
        nodes = None if op.nodes is None else sim.select(op.nodes)
        return [f"Wrote {p.name} ({p.stat().st_size} bytes)" if p.exists() else f"Wrote {p.name} (since removed)"
                for p in sim.snapshot(nodes)]
    if isinstance(op, Run):
        sim.run(op.ms)
        return []
    if isinstance(op, Wait):
        sim.wait(op.timeout_ms)
        return []
    if isinstance(op, AddController):
        if op.crash_leader_after_ms is not None:
            sim.inject(op.crash_leader_after_ms, "crash", "leader")
        nid = sim.add_controller(op.id, op.release)
        return [f"Added controller {nid} with directory id {sim.directory_id(nid)} and endpoints: "
                f"CONTROLLER://node-{nid}:9093"]
    if isinstance(op, RemoveController):
        did = sim.voter_directory_id(op.id)  # the voter's, as describe --replication shows it
        sim.remove_controller(op.id)
        return [f"Removed  KRaft controller {op.id} with directory id {did}"]
    if isinstance(op, AlterBrokerConfig):
        return sim.alter_broker_config(op.broker, op.configs, op.delete)
    if isinstance(op, AlterTopicConfig):
        return sim.alter_topic_config(op.topic, op.configs, op.delete)
    if isinstance(op, AlterClientMetrics):
        return sim.alter_client_metrics(op.name, op.configs, op.delete)
    if isinstance(op, AlterGroupConfig):
        return sim.alter_group_config(op.group, op.configs, op.delete)
    if isinstance(op, AlterClientQuotas):
        return sim.alter_client_quotas(op.entity(), op.quotas, op.delete)
    if isinstance(op, AlterScramCredentials):
        upsert = {m: sim.scram_secret(op.user, m, s.password, s.iterations) if s.password is not None
                  else (s.iterations, base64.b64decode(s.salt or ""), base64.b64decode(s.salted_password or ""))
                  for m, s in op.credentials.items()}
        return sim.alter_scram_credentials(op.user, upsert, op.delete)
    if isinstance(op, ElectLeaders):
        out = leader_election(sim, op.election_type, op.partitions)
        if out.exit_code != 0:  # (3.7.0's tool exits 0 after a failure: the step passes, as a script's would)
            raise SimError(out.failure_text)
        return out.lines
    if isinstance(op, ReassignPartitions):
        plan = [ReassignTarget(p.topic, p.partition, None if p.replicas is None else tuple(p.replicas))
                for p in op.partitions]
        done = reassign_partitions(sim, plan, op.allow_replication_factor_change)
        if done.failure is not None:
            raise SimError(done.failure)
        return done.lines
    if isinstance(op, UnregisterController):
        return sim.unregister_controller(op.id)
    if isinstance(op, UnregisterBroker):
        return sim.unregister_broker(op.id)
    if isinstance(op, CreateAcl):
        return sim.create_acl(principal=op.principal, host=op.host, operation=op.operation,
                              resource_type=op.resource_type, resource_name=op.resource_name,
                              pattern_type=op.pattern_type, permission=op.permission,
                              parse_principal=not op.admin_client)
    if isinstance(op, DeleteAcls):
        return sim.delete_acls(resource_type=op.resource_type, resource_name=op.resource_name,
                               pattern_type=op.pattern_type, principal=op.principal, host=op.host,
                               operation=op.operation, permission=op.permission)
    raise AssertionError(f"no way to carry out {type(op).__name__}")


def acts_on(sim: Simulation, op: StepBase) -> tuple[int, ...]:
    """The nodes a finished op acted on, for the timeline: its selection ("leader" names no
    fixed node), the node it added, or the controller it added or removed."""
    sel = getattr(op, "nodes", None)
    if isinstance(sel, list):
        return tuple(sorted(sel))
    if sel in ("all", "controllers", "brokers") or (isinstance(op, Snapshot) and sel is None):
        return tuple(sim.select(sel or "all"))
    if isinstance(op, AddNode):
        return (max(n.id for n in sim.nodes()),) if op.id is None else (op.id,)
    if isinstance(op, (AddController, RemoveController)) and op.id is not None:
        return (op.id,)
    return ()
