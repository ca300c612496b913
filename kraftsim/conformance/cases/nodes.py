"""The nodes the storage cases format: their server.properties, laid out once per side."""

from __future__ import annotations

from pathlib import Path

from kraftsim.conformance.cases import ReleaseContext
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
    if role == "standalone":
        return (f"process.roles=controller\nnode.id=1\n"
                f"controller.quorum.bootstrap.servers=127.0.0.1:{CONTROLLER_PORT}\n{common}"
                f"listeners=CONTROLLER://127.0.0.1:{CONTROLLER_PORT}\nlog.dirs={root}/meta\n")
    raise ValueError(role)


class Node:
    """The same node laid out twice: `<dir>/kafka/` for Kafka's tool, `<dir>/kraftsim/` for kraftsim's,
    each with its server.properties beside it (`<dir>/kafka.properties`)."""

    def __init__(self, ctx: ReleaseContext, name: str, role: str):
        self.dir = ctx.scratch(name)
        self.role = role
        for side in ("kafka", "kraftsim"):
            Path(self.config(side)).write_text(server_properties(self.dir / side, role), encoding="utf-8")

    def config(self, side: str) -> str:
        return str(self.dir / f"{side}.properties")

    @property
    def replacements(self) -> dict[str, str]:
        return {str(self.dir / "kafka"): NODE, str(self.dir / "kraftsim"): NODE}

    def tree_diffs(self) -> list[str]:
        return compare_trees(self.dir / "kafka", self.dir / "kraftsim")


