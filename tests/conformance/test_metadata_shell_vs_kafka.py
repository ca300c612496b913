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
