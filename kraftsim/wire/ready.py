"""Telling the world a served cluster is ready (contract 7): one line on stdout and a JSON file
written atomically, once every listener accepts connections."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from kraftsim.storage.fileio import atomic_write


def ready_line(info: Mapping[str, object]) -> str:
    return (f"kraftsim serve: ready: bootstrap-servers {info['bootstrap_servers']} "
            f"bootstrap-controllers {info['bootstrap_controllers']}")


def write_ready_file(path: Path | str, info: Mapping[str, object]) -> None:
    """The ready file: temporary file, fsync, rename (a reader never sees half of it)."""
    atomic_write(Path(path), (json.dumps(info) + "\n").encode("utf-8"))
