"""The interactive shell on a terminal: a real pty, line editing, completion, history, columns.

The expected `ls` layout at 80 columns is what Kafka 3.9.1's shell printed in the same pty
(jline on a system terminal) for the same snapshot (compared live in
tests/conformance/test_metadata_shell_vs_kafka.py).
"""

from __future__ import annotations

import sys

import pytest

from tests.shell.pty_support import Pty, kraftsim_shell_argv

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")


def test_session_on_a_terminal(shell_inputs):
    pytest.importorskip("readline", reason="line editing, history and completion come from readline")
    _, snapshot, _ = shell_inputs("3.9")
    shell = Pty(kraftsim_shell_argv("-s", str(snapshot)))
    try:
        assert "[ Kafka Metadata Shell ]" in shell.until(b">> ")
        shell.send("ls /image\n")
        listing = shell.until(b">> ")
        assert ("acls          cluster  delegationToken  producerIds  scram\n"
                "clientQuotas  configs  features         provenance   topics\n") in listing
        shell.send("cat /image/feat\t")  # completes the directory
        shell.until(b"features/")
        shell.send("metadataVersion\n")
        assert "3.9-IV0" in shell.until(b">> ")
        shell.send("\x1b[A\n")  # up arrow: the same command again
        assert "3.9-IV0" in shell.until(b">> ")
        shell.send("history\n")
        history = shell.until(b">> ")
        # jline keeps a repeated line once
        assert "    0  ls /image\n    1  cat /image/features/metadataVersion\n    2  history\n" in history
        shell.send("cd /image/topics/byName\n")
        shell.until(b">> ")
        shell.send("pwd\n")
        assert "pwd\n/image/topics/byName\n" in shell.until(b">> ")
        shell.send("exit\n")
    finally:
        code = shell.close()
    assert code == 0


def test_end_of_input_ends_the_session(shell_inputs):
    """^D at the prompt ends the session with exit 0, as in Kafka's shell. (^C is tested without
    a terminal in test_shell_parts.py: CPython's readline can hold a SIGINT that arrives just
    before it waits for input until the next key, which a test cannot time.)"""
    _, snapshot, _ = shell_inputs("3.9")
    shell = Pty(kraftsim_shell_argv("-s", str(snapshot)))
    try:
        shell.until(b">> ")
        shell.send("pwd\n")
        assert shell.until(b">> ") == "pwd\n/\n>> "
        shell.send("\x04")
    finally:
        code = shell.close()
    assert code == 0
