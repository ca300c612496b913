"""The snapshot peer's Java source as each release's API spells it (no Java needed): the
renamed builder method of 4.1, the moved utility classes of 4.4, 4.0 and older refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftsim.conformance.dist import Java, KafkaDist, KafkaUnavailable, resolve_release
from kraftsim.conformance.snapshot_peer import peer_source, warm


def _dist(version: str, tmp_path: Path) -> KafkaDist:
    return KafkaDist(resolve_release(version), tmp_path, (), Java(Path("/nonexistent/java"), 17))


def test_each_line_gets_its_api(tmp_path: Path) -> None:
    v41, v42, v44 = (peer_source(_dist(v, tmp_path)) for v in ("4.1.2", "4.2.0", "4.4.0"))
    assert ".setMaxBatchSize(" in v41 and ".setMaxBatchSizeBytes(" not in v41
    assert ".setMaxBatchSizeBytes(" in v42 and "utils.internals" not in v42
    assert "import org.apache.kafka.common.utils.internals.BufferSupplier;" in v44
    assert "import org.apache.kafka.common.utils.internals.LogContext;" in v44


@pytest.mark.parametrize("version", ["4.0.2", "3.9.1"])
def test_older_releases_are_refused_with_the_reason(tmp_path: Path, version: str) -> None:
    with pytest.raises(KafkaUnavailable, match=f"needs Kafka 4.1 or newer .*not {version}"):
        peer_source(_dist(version, tmp_path))


def test_a_compile_without_javac_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kraftsim.conformance.snapshot_peer import peer_classes

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaUnavailable, match="needs javac"):
        peer_classes(_dist("4.2.0", tmp_path))


def test_warm_is_the_best_after_two_warm_up_runs() -> None:
    assert warm([9.0, 1.0, 5.0, 4.0, 6.0]) == 4.0  # run 2's 1.0 is a warm-up run
    assert warm([3.0, 2.0]) == 2.0
