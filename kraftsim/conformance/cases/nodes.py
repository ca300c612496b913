"""The nodes the storage cases format: their server.properties, laid out once per side."""

from __future__ import annotations

from pathlib import Path

from kraftsim.conformance.cases.base import ReleaseContext
from kraftsim.conformance.compare import compare_trees

CLUSTER_ID = "ZnVsbHkgcmVwcm9kdWNpYg"
CONTROLLER_PORT, BROKER_PORT = 19093, 19092
# A SCRAM credential with its salt given, so Kafka's bytes are deterministic.
SCRAM = 'SCRAM-SHA-256=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]'
NODE = "<node>"

ROLES = ("combined", "controller", "broker")


def server_properties(root: Path, role: str) -> str:
    voters = f"controller.quorum.voters=1@127.0.0.1:{CONTROLLER_PORT}"
    common = "controller.listener.names=CONTROLLER\n"
    if role == "combined":
        return (f"process.roles=broker,controller\nnode.id=1\n{voters}\n{common}"
                f"listeners=PLAINTEXT://127.0.0.1:{BROKER_PORT},CONTROLLER://127.0.0.1:{CONTROLLER_PORT}\n"
                f"log.dirs={root}/data\n")
    if role == "controller":
        return (f"process.roles=controller\nnode.id=1\n{voters}\n{common}"
                f"listeners=CONTROLLER://127.0.0.1:{CONTROLLER_PORT}\nlog.dirs={root}/meta\n")
    if role == "broker":
        return (f"process.roles=broker\nnode.id=2\n{voters}\n{common}"
                f"listeners=PLAINTEXT://127.0.0.1:{BROKER_PORT}\nlog.dirs={root}/a,{root}/b\n")
    if role == "unstable":  # a combined node that may format at unstable levels
        return server_properties(root, "combined") + "unstable.feature.versions.enable=true\n"
    if role == "unstable-metadata":  # the same, with the name Kafka 3.7 reads (policy format_unstable)
        return server_properties(root, "combined") + "unstable.metadata.versions.enable=true\n"
    if role.startswith("unstable-not-boolean-"):  # a text that is not a boolean, under one of the two names
        name = "unstable.feature.versions.enable" if role.endswith("feature") else "unstable.metadata.versions.enable"
        return server_properties(root, "combined") + f"{name}=maybe\n"
    if role == "standalone":
        return (f"process.roles=controller\nnode.id=1\n"
                f"controller.quorum.bootstrap.servers=127.0.0.1:{CONTROLLER_PORT}\n{common}"
                f"listeners=CONTROLLER://127.0.0.1:{CONTROLLER_PORT}\nlog.dirs={root}/meta\n")
    raise ValueError(role)


class Node:
    """A node formatted by both tools at the same path (Kafka's tools order directories by
    their paths' hash codes, so the paths must be equal): Kafka writes `<dir>/node/`, which
    is then moved to `<dir>/kafka/`, and kraftsim writes `<dir>/node/` again, moved to
    `<dir>/kraftsim/`. server.properties lies beside, in `<dir>/server.properties`."""

    def __init__(self, ctx: ReleaseContext, name: str, role: str):
        self.dir = ctx.scratch(name)
        self.role = role
        self.root = self.dir / "node"
        Path(self.config).write_text(server_properties(self.root, role), encoding="utf-8")

    @property
    def config(self) -> str:
        return str(self.dir / "server.properties")

    @property
    def replacements(self) -> dict[str, str]:
        return {str(self.root): NODE}

    def keep(self, side: str) -> None:
        """Move what the last tool wrote aside, as `side`'s."""
        if self.root.exists():
            self.root.rename(self.dir / side)

    def tree_diffs(self) -> list[str]:
        return compare_trees(self.dir / "kafka", self.dir / "kraftsim")
