"""Progress of a long command on stderr: one status line, rewritten in place.

Shown when stderr is a terminal, or on any stderr with `--progress`; never on stdout, so
`--json` output and piped results stay byte-for-byte what they would be without it. A
command that ends within `AFTER_S` seconds prints nothing, and the line is redrawn at most
every `EVERY_S` seconds, so a callback per simulator event costs one clock read. Before the
command prints a line of its own it clears the status line (`clear`), so the two never mix.
The carriage return and erase-to-end-of-line go through `textsafe.own`.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, TextIO

from kraftsim.textsafe import own

#: Seconds of silence before the first status line (quick commands print nothing).
AFTER_S = 1.0
#: Seconds between two redraws.
EVERY_S = 0.25


def show_progress(args: argparse.Namespace) -> bool:
    """Progress is wanted: stderr is a terminal, or `--progress` asks for it anyway."""
    return bool(getattr(args, "progress", False)) or sys.stderr.isatty()


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", action="store_true",
                        help="show progress on stderr even when it is not a terminal")


class StatusLine:
    """`status(lambda: "text")` while working (the text is built only when it is shown);
    `status.clear()` before printing, and at the end."""

    def __init__(self, enabled: bool, *, out: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.enabled = enabled
        self.out = out if out is not None else sys.stderr
        self.clock = clock
        self.due = clock() + AFTER_S
        self.shown = False

    def __call__(self, text: Callable[[], str]) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now < self.due:
            return
        self.due = now + EVERY_S
        cr, erase = own("\r", self.out), own("\x1b[K", self.out)
        self.out.write(f"{cr}kraftsim: {text()}{erase}")
        self.out.flush()
        self.shown = True

    def clear(self) -> None:
        """Remove the status line (the next one comes after EVERY_S at the earliest)."""
        if self.shown:
            self.out.write(own("\r", self.out) + own("\x1b[K", self.out))
            self.out.flush()
            self.shown = False

    def say(self, print_line: Callable[[str], None]) -> Callable[[str], None]:
        """`print_line` that first clears the status line."""
        def say(text: str) -> None:
            self.clear()
            print_line(text)

        return say
