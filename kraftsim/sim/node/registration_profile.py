"""What an imported node registers with: the listeners, rack and log directories of its
real counterpart, kept in `node-<id>/registration.json` by `cluster import`.

A node made by `cluster create` has no such file and registers as every simulated node
does (`node-<id>`, PLAINTEXT 9092, CONTROLLER 9093, its one directory). A node imported
from a real cluster keeps what the real node last registered, so the what-if's image
shows the operator's own endpoints, racks and directory ids after the nodes re-register.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

PROFILE_FILE = "registration.json"


class ProfileListener(msgspec.Struct, frozen=True):
    name: str
    host: str
    port: int
    security_protocol: int = 0


class RegistrationProfile(msgspec.Struct, frozen=True, kw_only=True):
    """The registration fields a node takes from its real counterpart (None: the default)."""

    broker_listeners: tuple[ProfileListener, ...] | None = None
    controller_listeners: tuple[ProfileListener, ...] | None = None
    rack: str | None = None
    log_dirs: tuple[str, ...] | None = None


def read_profile(node_dir: Path) -> RegistrationProfile | None:
    """The node's profile, or None when it has none (a node of `cluster create`)."""
    p = Path(node_dir) / PROFILE_FILE
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        return None
    return msgspec.json.decode(raw, type=RegistrationProfile)


def write_profile(node_dir: Path, profile: RegistrationProfile) -> None:
    text = json.dumps(msgspec.to_builtins(profile), indent=2, sort_keys=True) + "\n"
    (Path(node_dir) / PROFILE_FILE).write_text(text, encoding="utf-8")


__all__ = ["PROFILE_FILE", "ProfileListener", "RegistrationProfile", "read_profile", "write_profile"]
