"""The jobs' defaults, from jobs.toml beside this file, and the catalog a job runs with."""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Any

from kraftsim.versions import Catalog, load_catalog


@functools.cache
def job_defaults() -> dict[str, Any]:
    return tomllib.loads(resources.files("kraftsim.pipeline").joinpath("jobs.toml").read_text(encoding="utf-8"))


def partitions_per_core() -> int:
    """Spark tasks per core a job's work is spread over, unless told otherwise."""
    return int(job_defaults()["fan_out"]["partitions_per_core"])


@functools.cache
def catalog_of(path: str | None = None, release: str | None = None) -> Catalog:
    """The catalog a job runs with (cached per worker process)."""
    return load_catalog(path, line=release)
