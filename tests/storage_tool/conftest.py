"""Helpers for the `kraftsim storage format / info / random-uuid` tests.

Every test formats into tmp_path. A node is described by a Kafka server.properties written
there: by default a combined broker+controller with a static quorum (controller.quorum.voters
set); `dynamic=True` swaps the voters for controller.quorum.bootstrap.servers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pytest

from kraftsim.cli.main import main

CLUSTER_ID = "5L6g3nShT-eMCtK--X86sw"
SDE = 1_700_000_000  # a SOURCE_DATE_EPOCH (seconds)

STATIC_NODE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
    "controller.quorum.voters": "1@localhost:9093",
}


def node_props(tmp_path: Path, *, dynamic: bool = False, dirs: tuple[str, ...] = ("data",),
               **overrides: str | None) -> dict[str, str]:
    props = dict(STATIC_NODE)
    if dynamic:
        del props["controller.quorum.voters"]
        props["controller.quorum.bootstrap.servers"] = "localhost:9093"
    props["log.dirs"] = ",".join(str(tmp_path / d) for d in dirs)
    for k, v in overrides.items():
        key = k.replace("_", ".")
        if v is None:
            props.pop(key, None)
        else:
            props[key] = v
    return props


def write_config(tmp_path: Path, props: Mapping[str, str], name: str = "server.properties") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def config_for(tmp_path: Path, *, dynamic: bool = False, dirs: tuple[str, ...] = ("data",),
               **overrides: str | None) -> Path:
    return write_config(tmp_path, node_props(tmp_path, dynamic=dynamic, dirs=dirs, **overrides))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_format(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> tuple[int, str, str]:
    return run(capsys, "storage", "format", "-c", str(config), "-t", CLUSTER_ID, *args)
