"""kraftsim: a simulator of Apache Kafka's KRaft metadata layer.

It reads and writes Kafka's real metadata files byte for byte, applies Kafka's rules for
metadata.version and feature upgrades and downgrades, and replays logs into images.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`kraftsim.serve`: imported on first use (it brings the simulator and asyncio).
    `kraftsim.wire.api.serve` is the same without the CLI's commands handed over."""
    if name == "serve":
        from importlib import import_module
        value = import_module("kraftsim.cli.serve_cmd").serve  # with the CLI commands handed over
        globals()["serve"] = value
        return value
    raise AttributeError(f"module 'kraftsim' has no attribute {name!r}")
def shipped_folder(package: str, folder: str) -> "Path":
    """Where a data folder of the repository is: the top-level `folder` (records/, scenarios/)
    of the source checkout this code runs from, so a work tree's own edits count, else the copy
    a wheel installed as the namespace package `package` (see setup.py). The checkout's path
    is returned when neither exists, so an error names where the folder was looked for."""
    from importlib.util import find_spec
    from pathlib import Path

    checkout = Path(__file__).resolve().parents[1]
    if (checkout / folder).is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout / folder
    try:
        spec = find_spec(package)
    except ModuleNotFoundError:
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        if Path(location).is_dir():
            return Path(location)
    return checkout / folder
