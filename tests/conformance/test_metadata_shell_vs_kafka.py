"""kraftsim metadata-shell and Kafka's MetadataShell on a terminal (`kafka` marker).

The line-for-line comparisons of commands (as arguments and on stdin) are conformance
cases (metadata-shell/lines/*, run by test_vs_kafka.py). This adds what only a terminal
shows: `ls` laid out in columns for the terminal's width, and tab completion, in a pty of
80 columns driven the same way for both shells. One JVM, heap 256m. Completions here are
unique: where several candidates match, jline lists them in its own layout and readline
in its own (a named difference: the line editor is Python's readline).
"""

from __future__ import annotations

import pytest

from kraftsim.conformance.dist import resolve_release
from kraftsim.conformance.tools import java_command
from tests.conformance.conftest import kafka_dist, releases
from tests.shell.conftest import make_cluster
from tests.shell.pty_support import Pty, kraftsim_shell_argv, screen_lines

pytestmark = pytest.mark.kafka

_SHELL_RELEASES = [v for v in releases() if resolve_release(v).shell][:1]
INPUTS = ("ls /image\n", "ls /image/topics/byName/topic-0 /image/cluster\n", "cat /image/feat\t", "metadataVersion\n",
          "cd /image/clu\t", "\n", "ls brok\t", "\n", "pwd\n")


def _transcript(argv: list[str]) -> list[str]:
    shell = Pty(argv)
    try:
        shell.until(b">> ")
        for text in INPUTS:
            shell.send(text)
            if text.endswith("\n"):
                shell.until(b">> ")
            else:  # a completion: wait for the line to show it
                shell.until(text[:-1].encode())
        shell.send("exit\n")
    finally:
        shell.close()
    return screen_lines(shell.seen.decode(errors="replace"))


@pytest.mark.parametrize("version", _SHELL_RELEASES)
def test_terminal_session_agrees_with_kafka(version, tmp_path):
    dist = kafka_dist(version)
    _, snapshot, _ = make_cluster(tmp_path, resolve_release(version).line)
    kafka = _transcript(java_command(dist, "metadata-shell", ["--snapshot", str(snapshot)]))
    ours = _transcript(kraftsim_shell_argv("--release", version, "--snapshot", str(snapshot)))
    assert "acls          cluster  delegationToken  producerIds  scram" in ours
    assert ours == kafka


#: Snapshots real Kafka nodes wrote (../shared/oracle), each with a release whose shell reads it.
REAL_SNAPSHOTS = (
    ("cp-kafka-3.6_rjmfernandes/__cluster_metadata-0/00000000000000014926-0000000001.checkpoint", "3.7.2"),
    ("cp-kafka-7.5.1_3voters_greenlemonT/kafka3/__cluster_metadata-0/00000000000000028870-0000000189.checkpoint",
     "4.0.2"),
    ("kafka-4.1_dkoh12/__cluster_metadata-0/00000000000000007209-0000000001.checkpoint", "4.3.1"),
)
KAFKA_ATTEMPTS = 5


@pytest.mark.parametrize(("name", "version"), [(n, v) for n, v in REAL_SNAPSHOTS if v in releases()])
def test_real_snapshot_tree_agrees_with_kafka(capsys, name, version):
    """tree / of a real snapshot, line for line. Kafka's shell may answer before its loader has
    caught up with a large file (an empty or earlier image), so it is asked up to five times."""
    from kraftsim.conformance.tools import run_tool
    from tests.cli_support import run
    from tests.paths import ORACLE

    path = ORACLE / name
    if not path.is_file():
        pytest.skip(f"no {path} (set KRAFTSIM_SHARED)")
    code, ours, _ = run(capsys, "metadata-shell", "--release", version, "-s", str(path), "tree", "/")
    assert code == 0
    dist = kafka_dist(version)
    for _ in range(KAFKA_ATTEMPTS):
        kafka = run_tool(dist, "metadata-shell", ["--snapshot", str(path), "tree", "/"], timeout=120)
        if kafka.stdout == ours:
            break
    assert kafka.stdout.splitlines() == ours.splitlines()
