"""A shell driven through a pseudo-terminal, every read bounded in count and time: a shell
that stops answering fails the test instead of hanging it."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time

_ESCAPES = re.compile(r"\x1b(\[[?0-9;]*[A-Za-z]|[=>])")
READ_LIMIT_S = 60  # a guard against a hung shell, not a measure of speed
MAX_READS = 10_000


class Pty:
    """A command on a pseudo-terminal of 24 x 80 (TERM=xterm)."""

    def __init__(self, argv: list[str]):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = dict(os.environ, TERM="xterm", INPUTRC=os.devnull)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     preexec_fn=_controlling_terminal)
        os.close(slave)
        self.seen = b""
        self.cursor = 0  # where the next `until` starts looking

    def until(self, token: bytes) -> str:
        """Read until `token` appears after the end of the last one found; the text from there to
        the end of this one, as a reader sees it (no escape sequences, no carriage returns)."""
        start = self.cursor
        deadline = time.monotonic() + READ_LIMIT_S
        for _ in range(MAX_READS):
            if token in self.seen[start:] or time.monotonic() > deadline:
                break
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:  # the shell closed the terminal
                    break
        found = self.seen.find(token, start)
        assert found >= 0, f"no {token!r} in {self.seen[start:]!r}"
        self.cursor = found + len(token)
        return _ESCAPES.sub("", self.seen[start:self.cursor].decode(errors="replace")).replace("\r", "")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=READ_LIMIT_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)


def _controlling_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is the pty (stdin), so
    that ^C typed there is a SIGINT, as on a user's terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def kraftsim_shell_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "kraftsim", "metadata-shell", *args]


def screen_lines(text: str) -> list[str]:
    """What a reader sees of a terminal transcript: no escape sequences, no carriage returns,
    no log lines (`[2026-...] ERROR ...`) or JVM warnings."""
    lines = _ESCAPES.sub("", text).replace("\r", "").split("\n")
    return [ln for ln in lines if not re.match(r"\[\d{4}-\d\d-\d\d |WARNING: |\w{3} \d\d?, \d{4} ", ln)]
