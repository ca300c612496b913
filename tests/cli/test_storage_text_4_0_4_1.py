"""What kafka-storage / kafka-features 4.0 and 4.1 print where 4.2 changed the text (policies
`version_mapping_unknown` and `storage_feature_argument`), as the real 4.0.2 and 4.1.2 tools
print it (the conformance cases `tool-text/*` compare them with the jars)."""

from __future__ import annotations

import pytest

from kraftsim.conformance.compare import clean_lines
from tests.cli_support import run

MATCH_ERROR = 'Exception in thread "main" scala.MatchError: [Ljava.lang.String;@'


@pytest.mark.parametrize("release,latest", [("4.0", "4.0-IV3"), ("4.1", "4.1-IV1")])
@pytest.mark.parametrize("tool", [["storage", "version-mapping", "--release", "{r}"],
                                  ["features", "--release", "{r}", "version-mapping"]])
def test_an_unknown_release_version_names_the_production_range(capsys: pytest.CaptureFixture[str], release: str,
                                                                latest: str, tool: list[str]) -> None:
    argv = [a.format(r=release) for a in tool]
    code, out, err = run(capsys, *argv, "--release-version", "9.9-IV9")
    assert (code, out) == (1, "")
    assert err == f"Unknown release version '9.9-IV9'. Supported versions are: 3.3-IV3 to {latest}\n"


def test_4_2_keeps_the_metadata_version_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "storage", "version-mapping", "--release", "4.2", "--release-version", "9.9-IV9")
    assert code == 1 and err.startswith("Unknown metadata.version '9.9-IV9'. Supported metadata.version are: 3.3-IV3, ")


@pytest.mark.parametrize("release", ["4.0", "4.1"])
def test_an_argument_without_one_equals_sign_dies_of_a_match_error(capsys: pytest.CaptureFixture[str],
                                                                   release: str) -> None:
    code, out, err = run(capsys, "storage", "feature-dependencies", "--release", release,
                         "--feature", "group.version=1", "--feature", "group.version")
    assert code == 1
    # the answers before the bad argument come first, as StorageTool's loop prints them
    assert out == "group.version=1 has no dependencies.\n"
    assert err.startswith(MATCH_ERROR) and err.endswith(" (of class [Ljava.lang.String;)\n")
    # Kafka's identity hash is the JVM's pick; the comparison masks it on both sides
    kafka = 'Exception in thread "main" scala.MatchError: [Ljava.lang.String;@6c0d7c83 (of class [Ljava.lang.String;)'
    assert clean_lines(err) == clean_lines(kafka)
    # deterministic
    assert run(capsys, "storage", "feature-dependencies", "--release", release, "--feature", "group.version")[2] == \
        run(capsys, "storage", "feature-dependencies", "--release", release, "--feature", "group.version")[2]


def test_4_2_refuses_the_same_argument_with_its_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "storage", "feature-dependencies", "--release", "4.2",
                         "--feature", "group.version=1", "--feature", "a=b=c")
    assert (code, out) == (1, "group.version=1 has no dependencies.\n")
    assert err.startswith("Invalid feature format: a=b=c.")
