"""The catalog's entries against the released jars: LATEST_PRODUCTION, latestTesting, every
production feature's levels, and the configs replay keeps (KAFKA-19851), read by a small Java
program on each release's own classpath. Covers the entries whose facts were read this way
(3.9.2, a patch of 3.9.0's entry; 4.2.1 and 4.2.2, entries of their own) and 4.3.1, whose lists
the same reading reproduces."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kraftsim.versions import default_catalog
from tests.conformance.conftest import kafka_dist

PROBE = Path(__file__).with_name("ReleaseFacts.java")
pytestmark = pytest.mark.kafka


def _facts(version: str) -> dict[str, object]:
    dist = kafka_dist(version)
    proc = subprocess.run([str(dist.java.path), "-Xmx128m", "-cp", dist.classpath, str(PROBE)],
                          capture_output=True, text=True, timeout=180, check=True)
    out: dict[str, object] = {"features": {}}
    for line in proc.stdout.splitlines():
        key, _, rest = line.partition(" ")
        if key == "feature":
            name, *levels = rest.split()
            values = dict(x.split("=") for x in levels)
            out["features"][name] = (int(values["prod"]), int(values["test"]))  # type: ignore[index]
        elif key in ("TOPIC", "CLIENT_METRICS", "GROUP"):
            out[key] = frozenset(rest.strip()[1:-1].split(", "))
        else:
            out[key] = rest.strip()
    return out


@pytest.mark.parametrize("version", ["3.9.2", "4.2.1", "4.2.2", "4.3.1"])
def test_catalog_entry_matches_the_jar(version: str) -> None:
    facts = _facts(version)
    cat = default_catalog().at_release(version)
    assert cat.release.name == version
    assert facts["LATEST_PRODUCTION"] == cat.latest_production.version
    assert facts["latestTesting"] == cat.latest_testing.version
    features = facts["features"]
    assert isinstance(features, dict)
    for f in cat.production_features:
        assert features[f.name] == f.supported_range(False)[1:] + f.supported_range(True)[1:], f.name
    filt = cat.config_replay_filter()
    assert (facts["checker"] == "yes") == (filt is not None)
    if filt is not None:
        assert dict(filt.names) == {t: facts[t] for t in ("CLIENT_METRICS", "GROUP", "TOPIC")}
