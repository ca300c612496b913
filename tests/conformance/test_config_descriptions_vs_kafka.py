"""The release data behind a topic's described configs (kraftsim/controller/data/
config_descriptions.toml) read again from a live node of the release: the same order rule,
defaults, synonyms, broker defaults and documentation (kraftsim.conformance.config_descriptions
reads them; `python3 -m kraftsim.conformance.config_descriptions` writes the file). Releases:
KRAFTSIM_CONFORMANCE_CONFIG_RELEASES (default 3.7.2 and 4.4.0: one of each order rule)."""

from __future__ import annotations

import tomllib

import pytest

from kraftsim.conformance.config_descriptions import DATA, capture
from kraftsim.versions import release_name_key
from tests.conformance.conftest import _selected, kafka_dist

RELEASES = _selected("KRAFTSIM_CONFORMANCE_CONFIG_RELEASES", ("3.7.2", "4.4.0"))


def _held(release: str) -> tuple[dict, dict[str, str]]:
    """The data file's entry for `release`, and the documentation it gives each config."""
    data = tomllib.loads(DATA.read_text(encoding="utf-8"))
    key = release_name_key(release)
    entry = max((e for e in data["release"] if release_name_key(e["since"]) <= key),
                key=lambda e: release_name_key(e["since"]))
    docs: dict[str, str] = {}
    for d in sorted(data["doc"], key=lambda d: release_name_key(d["since"])):
        if release_name_key(d["since"]) <= key:
            docs[d["name"]] = d["text"]
    return entry, docs


@pytest.mark.kafka
@pytest.mark.parametrize("release", RELEASES)
def test_the_data_is_what_a_live_node_of_the_release_describes(release):
    live = capture(kafka_dist(release))
    entry, docs = _held(release)
    assert live["order"] == entry["order"]
    assert live["defaults"] == entry["defaults"]
    assert (live["created_defaults"] or live["defaults"]) == (entry.get("created_defaults") or entry["defaults"])
    assert live["synonyms"] == entry["synonyms"]
    assert live["broker_defaults"] == entry["broker_defaults"]
    assert live["docs"] == {name: docs.get(name) for name in live["docs"]}
