"""The shipped suite (the repository's `scenarios/` folder) and the `scenario new` template."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: scenarios/ beside the package (a source checkout or an editable install).
SUITE_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def scenario_files(paths: list[Path]) -> list[Path]:
    """Files named on the command line, with each directory replaced by its *.toml files (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(p.glob("*.toml"))
        else:
            out.append(p)
    return out


def template(name: str) -> str:
    """A commented scenario that runs as it is: the starting point of a new what-if."""
    text = resources.files("kraftsim.scenario").joinpath("template.toml").read_text(encoding="utf-8")
    return text.replace("{name}", name)
