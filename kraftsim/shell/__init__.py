"""kraftsim.shell: Kafka's metadata shell (`kafka-metadata-shell`) over kraftsim's images.

  style      what differs between releases' shells (tree shape, toString forms, flags)
  tree       the node tree (/image/..., /local/...) and the toString forms of its files
  commands   ls, cat, tree, find, cd, pwd, history, help, man, exit: arguments and texts
  session    loading a file or directory, one command, the interactive loop, completion
"""

from kraftsim.shell.commands import ShellState, parse_command
from kraftsim.shell.session import (
    LoadedShell, complete_line, interactive_loop, open_shell, run_noninteractive, run_words, stdin_is_terminal,
)
from kraftsim.shell.style import ShellStyle, style_for
from kraftsim.shell.tree import ShellFault, ShellTree

__all__ = [
    "LoadedShell", "ShellFault", "ShellState", "ShellStyle", "ShellTree", "complete_line", "interactive_loop",
    "open_shell", "parse_command", "run_noninteractive", "run_words", "stdin_is_terminal", "style_for",
]
