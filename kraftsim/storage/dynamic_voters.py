"""`--initial-controllers` and standalone voters: Kafka's DynamicVoter(s) and the VotersRecord
of a dynamic quorum."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Mapping

from kraftsim.protocol.entries import Payload
from kraftsim.protocol.primitives import Uuid
from kraftsim.protocol.registry import Registry, default_registry
from kraftsim.javacompat import copy_capacity, hash_map_order, int_hash, parse_int, string_split
from kraftsim.versions import IllegalArgument

# ------------------------------------------------------------------------------ dynamic voters


@dataclass(frozen=True)
class DynamicVoter:
    """One KIP-853 initial voter, `id@host:port:directoryId`."""

    node_id: int
    host: str
    port: int
    directory_id: Uuid

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.node_id}@{host}:{self.port}:{self.directory_id}"


def parse_dynamic_voter(text: str) -> DynamicVoter:
    """Kafka's DynamicVoter.parse, with its IllegalArgumentException texts."""
    s = text.strip()
    at = s.find("@")
    if at < 0:
        raise IllegalArgument("No @ found in dynamic voter string.")
    if at == 0:
        raise IllegalArgument("Invalid @ at beginning of dynamic voter string.")
    node_id = parse_int(s[:at])
    if node_id is None:
        raise IllegalArgument("Failed to parse node id in dynamic voter string.")
    if node_id < 0:
        raise IllegalArgument(f"Invalid negative node id {node_id} in dynamic voter string.")
    s = s[at + 1 :]
    if not s:
        raise IllegalArgument("No hostname found after node id.")
    if s.startswith("["):
        end = s.find("]")
        if end < 0:
            raise IllegalArgument("Hostname began with left bracket, but no right bracket was found.")
        host, s = s[1:end], s[end + 1 :]
    else:
        end = s.find(":")
        if end < 0:
            raise IllegalArgument("No colon following hostname could be found.")
        host, s = s[:end], s[end:]
    if not s.startswith(":"):
        raise IllegalArgument("Port section must start with a colon.")
    s = s[1:]
    end = s.find(":")
    if end < 0:
        raise IllegalArgument("No colon following port could be found.")
    port = parse_int(s[:end])
    if port is None:
        raise IllegalArgument("Failed to parse port in dynamic voter string.")
    if not 0 <= port <= 65535:
        raise IllegalArgument(f"Invalid port {port} in dynamic voter string.")
    try:
        directory_id = Uuid.from_string(s[end + 1 :])
    except ValueError:
        raise IllegalArgument("Failed to parse directory ID in dynamic voter string.") from None
    return DynamicVoter(node_id, host, port, directory_id)


def parse_dynamic_voters(text: str) -> dict[int, DynamicVoter]:
    """Kafka's DynamicVoters.parse: comma-separated voters, by node id (ascending)."""
    voters: dict[int, DynamicVoter] = {}
    parsed = [parse_dynamic_voter(v) for v in string_split(text.strip(), ",") if v]
    if not parsed:
        raise IllegalArgument("No voters given.")
    for v in parsed:
        if v.node_id in voters:
            raise IllegalArgument(f"Node id {v.node_id} was specified more than once.")
        voters[v.node_id] = v
    return dict(sorted(voters.items()))


def _java_host_string(host: str) -> str:
    """InetSocketAddress(host, port).getHostString(): names as given, IP literals as Java prints them."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if ip.version == 6:
        return ":".join(f"{int(g, 16):x}" for g in ip.exploded.split(":"))
    return host


def voters_record(voters: Mapping[int, DynamicVoter], controller_listener_name: str,
                  registry: Registry | None = None) -> Payload:
    """VoterSet.toVotersRecord(0) for DynamicVoters.toVoterSet(listener): one endpoint per voter,
    the listener name upper-cased, kraft.version support 0-1; voters in Java HashMap order."""
    rt = (registry or default_registry())["VotersRecord"]
    voter_cls, endpoint_cls, feature_cls = rt.nested["Voter"], rt.nested["Endpoint"], rt.nested["KRaftVersionFeature"]
    ids = hash_map_order(list(voters), int_hash)  # toVoterSet's HashMap
    ids = hash_map_order(ids, int_hash, initial=copy_capacity(len(ids)))  # VoterSet.fromMap copies it
    out = []
    for i in ids:
        v = voters[i]
        out.append(voter_cls(
            voter_id=v.node_id, voter_directory_id=v.directory_id,
            endpoints=[endpoint_cls(name=controller_listener_name.upper(), host=_java_host_string(v.host), port=v.port)],
            k_raft_version_feature=feature_cls(min_supported_version=0, max_supported_version=1)))
    return Payload(rt, 0, rt.new(version=0, voters=out))
