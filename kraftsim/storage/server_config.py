"""What `kafka-storage` reads from server.properties (Kafka's KafkaConfig, as far as the
tool needs it): node id, roles, log and metadata directories, listeners, voters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from kraftsim.errors import KraftsimError
from kraftsim.regular_file import open_input
from kraftsim.storage.format_common import (
    QUORUM_BOOTSTRAP_SERVERS,
    QUORUM_VOTERS,
    release_text,
)
from kraftsim.javacompat import parse_int
from kraftsim.storage.java_properties import load_properties, properties_text
from kraftsim.versions import Catalog

# ------------------------------------------------------------------------------ server.properties


@dataclass(frozen=True)
class Listener:
    name: str  # normalised (upper case)
    host: str | None
    port: int


_LISTENER = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


def _parse_listeners(text: str | None, key: str) -> list[Listener]:
    out = []
    for item in _csv(text):
        m = _LISTENER.match(item)
        if not m:
            raise KraftsimError(f"Invalid value {text} for configuration {key}: "
                                f"Unable to parse {item} to a broker endpoint")
        out.append(Listener(m.group(1).upper(), m.group(2) or None, int(m.group(3))))
    return out


def _csv(text: str | None) -> list[str]:
    """Kafka's Csv.parseCsvList: split on commas with surrounding blanks, empty items dropped."""
    if text is None:
        return []
    return [p for p in re.split(r"\s*,\s*", text.strip()) if p]


@dataclass(frozen=True)
class ServerConfig:
    """What the storage tool reads from a Kafka server.properties (KafkaConfig)."""

    process_roles: tuple[str, ...] = ()
    node_id: int = -1
    log_dirs: tuple[str, ...] = ()
    metadata_log_dir: str | None = None  # metadata.log.dir, else the first of log.dirs
    controller_listener_names: tuple[str, ...] = ()
    quorum_voters: tuple[str, ...] = ()
    quorum_bootstrap_servers: tuple[str, ...] = ()
    listeners: tuple[Listener, ...] = ()
    advertised_listeners: tuple[Listener, ...] = ()
    #: The unstable-versions configs given (UNSTABLE_CONFIGS), as texts: which name a release
    #: reads, and so which text must be a boolean, is the release's (`unstable_enabled`).
    unstable_configs: tuple[tuple[str, str], ...] = ()
    source: str = "<config>"

    def unstable_enabled(self, catalog: Catalog) -> bool:
        """Whether a node of `catalog`'s release runs with unstable versions enabled."""
        return unstable_versions_enabled(catalog, dict(self.unstable_configs))

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def directories(self) -> list[str]:
        """StorageTool.configToLogDirectories: log.dirs plus metadata.log.dir, sorted, once each."""
        dirs = set(self.log_dirs)
        if self.metadata_log_dir is not None:
            dirs.add(self.metadata_log_dir)
        return sorted(dirs)

    @property
    def controller_listener_name(self) -> str | None:
        return self.controller_listener_names[0] if self.controller_listener_names else None

    def effective_advertised_controller_listeners(self) -> list[Listener]:
        """KafkaConfig.effectiveAdvertisedControllerListeners: per controller listener name, the
        advertised listener of that name, else the listener of that name (0.0.0.0 as no host)."""
        out = []
        for name in self.controller_listener_names:
            wanted = name.upper()
            found = next((l for l in self.advertised_listeners if l.name == wanted), None)
            if found is None:
                found = next((l for l in self.listeners if l.name == wanted), None)
                if found is not None and found.host == "0.0.0.0":
                    found = Listener(found.name, None, found.port)
            if found is not None:
                out.append(found)
        return out

    @classmethod
    def from_properties(cls, props: Mapping[str, str], source: str = "<config>") -> "ServerConfig":
        """Read the keys the storage tool needs, with KafkaConfig's parsing rules and texts."""
        roles = tuple(_csv(props.get("process.roles")))
        for r in roles:
            if r not in ("broker", "controller"):
                raise KraftsimError(f"Unknown process role '{r}' (only 'broker' and 'controller' are allowed roles)")
        node_id = -1
        if "node.id" in props:
            node_id = parse_int(props["node.id"].strip())  # type: ignore[assignment]
            if node_id is None:
                raise KraftsimError(f"Invalid value {props['node.id']} for configuration node.id: Not a number of type INT")
        elif roles:
            raise KraftsimError('Missing required configuration "node.id" which has no default value.')
        log_dirs = tuple(_csv(props["log.dirs"] if "log.dirs" in props else props.get("log.dir", "/tmp/kafka-logs")))
        metadata_log_dir = props.get("metadata.log.dir")
        if metadata_log_dir is None and log_dirs:
            metadata_log_dir = log_dirs[0]
        return cls(
            process_roles=roles,
            node_id=node_id,
            log_dirs=log_dirs,
            metadata_log_dir=metadata_log_dir,
            controller_listener_names=tuple(_csv(props.get("controller.listener.names"))),
            quorum_voters=tuple(_csv(props.get(QUORUM_VOTERS))),
            quorum_bootstrap_servers=tuple(_csv(props.get(QUORUM_BOOTSTRAP_SERVERS))),
            listeners=tuple(_parse_listeners(props.get("listeners"), "listeners")),
            advertised_listeners=tuple(_parse_listeners(props.get("advertised.listeners"), "advertised.listeners")),
            unstable_configs=tuple((name, props[name]) for name in UNSTABLE_CONFIGS if name in props),
            source=source,
        )

    @classmethod
    def for_directories(cls, directories: Sequence[str], node_id: int = -1, *, dynamic_quorum: bool = False,
                        controller_listener: str = "CONTROLLER", host: str = "localhost",
                        port: int = 9093) -> "ServerConfig":
        """The node `--dir D... --node-id N` stands for (kraftsim's shorthand for a config file): a
        combined broker+controller whose controller listener is CONTROLLER://localhost:9093, with
        a static quorum of itself (controller.quorum.voters set) unless `dynamic_quorum` (then
        controller.quorum.bootstrap.servers instead, as for --standalone / --initial-controllers /
        --no-initial-controllers). The metadata log directory is the first directory."""
        listener = Listener(controller_listener.upper(), host, port)
        server = f"{host}:{port}"
        return cls(
            process_roles=("broker", "controller"),
            node_id=node_id,
            log_dirs=tuple(directories),
            metadata_log_dir=directories[0] if directories else None,
            controller_listener_names=(controller_listener,),
            quorum_voters=() if dynamic_quorum else (f"{node_id}@{server}",),
            quorum_bootstrap_servers=(server,) if dynamic_quorum else (),
            listeners=(listener,),
            source="--dir",
        )


#: The configs that let a node use unstable versions, by release (policy format_unstable).
UNSTABLE_CONFIGS = ("unstable.feature.versions.enable", "unstable.metadata.versions.enable")


def unstable_versions_enabled(catalog: Catalog, configs: Mapping[str, str]) -> bool:
    """Whether a node of `catalog`'s release with these server configs lets unstable versions
    be used (formatted, advertised, finalized). Each release reads one name (policy
    format_unstable: 3.7 unstable.metadata.versions.enable, 3.8 on
    unstable.feature.versions.enable, none before 3.7) and checks its text as KafkaConfig
    checks a boolean; a name the release does not read is ignored, whatever its text."""
    name = release_text(catalog, "format_unstable", "config")
    return False if name is None else _boolean(configs, name)


#: A broker's group-coordinator configs a simulated node takes, with Kafka's defaults: how
#: `__consumer_offsets` is created when a client first looks for a group's coordinator
#: (KafkaConfig's offsets.topic.num.partitions, an INT, and offsets.topic.replication.factor,
#: a SHORT, both at least 1). A one-broker cluster needs the factor 1, as on a real one.
OFFSETS_TOPIC_PARTITIONS, OFFSETS_TOPIC_REPLICATION_FACTOR = "offsets.topic.num.partitions", \
    "offsets.topic.replication.factor"
GROUP_COORDINATOR_CONFIGS: dict[str, tuple[int, int, str]] = {  # name: (default, bits, Kafka's type)
    OFFSETS_TOPIC_PARTITIONS: (50, 32, "INT"), OFFSETS_TOPIC_REPLICATION_FACTOR: (3, 16, "SHORT")}
#: Kafka's KRaft authorizer: the one authorizer.class.name a simulated node takes.
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
#: The principal of every client of a PLAINTEXT listener, the only kind `kraftsim serve` opens.
ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"
#: The authorizer's configs a simulated node takes. With an authorizer, super.users must name
#: ANONYMOUS_PRINCIPAL: kraftsim authorizes every request as Kafka authorizes a super user's,
#: and does not judge requests against ACLs.
AUTHORIZER_CONFIGS = ("authorizer.class.name", "super.users")
#: Every server config a simulated node takes.
NODE_CONFIGS = (*UNSTABLE_CONFIGS, *GROUP_COORDINATOR_CONFIGS, *AUTHORIZER_CONFIGS)


def validate_node_configs(configs: Mapping[str, object]) -> dict[str, str]:
    """A simulated node's configs as server.properties texts: only NODE_CONFIGS, each checked
    as KafkaConfig checks it (node_config_text), and the authorizer's together."""
    out = {name: node_config_text(name, value) for name, value in configs.items()}
    _check_authorizer(out)
    return out


def node_config_text(name: str, value: object) -> str:
    """One config of NODE_CONFIGS as its server.properties text, checked on its own: the
    unstable-versions ones booleans (true/false or the text of one, so every release reading
    either name can), the group coordinator's integers of their type, at least 1, the
    authorizer's texts."""
    if name not in NODE_CONFIGS:
        raise KraftsimError(f"node config {name!r} is not one kraftsim simulates (it simulates "
                            f"{', '.join(NODE_CONFIGS[:-1])} and {NODE_CONFIGS[-1]})")
    if name in GROUP_COORDINATOR_CONFIGS:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise KraftsimError(f"node config {name}: expected a number, got {value!r}")
        text = str(value).strip()
        _at_least_one({name: text}, name)
        return text
    if name in AUTHORIZER_CONFIGS:
        if not isinstance(value, str):
            raise KraftsimError(f"node config {name}: expected a text, got {value!r}")
        return value.strip()
    flag = str(value).lower() if isinstance(value, bool) else value
    if not isinstance(flag, str):
        raise KraftsimError(f"node config {name}: expected true or false, got {value!r}")
    _boolean({name: flag}, name)
    return flag.strip()


def _check_authorizer(configs: Mapping[str, str]) -> None:
    """StandardAuthorizer only, and only with super.users naming ANONYMOUS_PRINCIPAL (see
    AUTHORIZER_CONFIGS)."""
    authorizer = configs.get("authorizer.class.name", "")
    if not authorizer:
        return
    if authorizer != STANDARD_AUTHORIZER:
        raise KraftsimError(f"node config authorizer.class.name: kraftsim simulates Kafka's StandardAuthorizer "
                            f"({STANDARD_AUTHORIZER}) only, not {authorizer}")
    supers = [p.strip() for p in configs.get("super.users", "").split(";") if p.strip()]
    if ANONYMOUS_PRINCIPAL not in supers:
        raise KraftsimError(
            f"node config authorizer.class.name is set, so super.users must name {ANONYMOUS_PRINCIPAL} (it names "
            f"{'; '.join(supers) or 'nobody'}): kraftsim's clients are all {ANONYMOUS_PRINCIPAL} (PLAINTEXT), and it "
            "authorizes every request as Kafka authorizes a super user's, without judging it against ACLs")


def group_coordinator_config(configs: Mapping[str, str], name: str) -> int:
    """A node's group-coordinator config `name` (GROUP_COORDINATOR_CONFIGS) from its checked
    configs, or Kafka's default."""
    return _at_least_one(configs, name) if name in configs else GROUP_COORDINATOR_CONFIGS[name][0]


def _at_least_one(props: Mapping[str, str], name: str) -> int:
    _, bits, type_name = GROUP_COORDINATOR_CONFIGS[name]
    text = props[name].strip()
    value = parse_int(text, bits)
    if value is None:
        raise KraftsimError(f"Invalid value {text} for configuration {name}: Not a number of type {type_name}")
    if value < 1:
        raise KraftsimError(f"Invalid value {value} for configuration {name}: Value must be at least 1")
    return value


def _boolean(props: Mapping[str, str], name: str) -> bool:
    text = props.get(name, "false").strip().lower()
    if text not in ("true", "false"):
        raise KraftsimError(f"Invalid value {props[name]} for configuration {name}: Expected value to be either true "
                            "or false")
    return text == "true"


#: The largest server.properties read (a real one is a few kilobytes): a file that never ends
#: (/dev/zero) would otherwise be read until memory ran out.
MAX_CONFIG_BYTES = 16 * 1024 * 1024


def read_server_config(path: Path | str) -> ServerConfig:
    """Read a Kafka server.properties file (Utils.loadProps then KafkaConfig)."""
    p = Path(path)
    try:
        with open_input(p) as f:  # (a FIFO nobody writes to: an OSError, not an endless wait)
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise KraftsimError(f"{p}: {e.strerror or e}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise KraftsimError(f"{p}: more than {MAX_CONFIG_BYTES:,} bytes: not a server.properties file kraftsim reads")
    try:
        props = load_properties(properties_text(raw))  # Properties.load(InputStream) reads ISO 8859-1
    except ValueError as e:
        raise KraftsimError(f"{p}: {e}") from None
    return ServerConfig.from_properties(props, str(p))
