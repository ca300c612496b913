"""Cluster commands on a served directory (contract 7): while `kraftsim serve DIR` runs,
`kraftsim cluster status|crash|...|add`, `features --cluster DIR`, `topics --cluster DIR`,
`leader-election`, `configs` and `metadata-quorum --cluster DIR` are carried out by the server
instead of opening DIR themselves
(the server holds it).

The server listens on a 127.0.0.1 port and writes DIR/.kraftsim-serve (mode 0600): its pid,
the port and a random token. A command that finds the file sends its argv, with every path
in it made absolute on the client's side (`absolute_argv`), and the token; the server never
changes its working directory. It runs the command with the very code the command runs on
its own, on a worker thread: the listeners stay open meanwhile, answer ApiVersions as before
and hold other requests (the cluster is saved and closed while the command has the
directory: there is no cluster to answer them from), then the directory is
opened again and the listeners follow. What the command printed and its exit code go back.
A file left by a server that was killed (its pid gone, or nothing listening) is ignored.
Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import io
import json
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftsim import jsoninput

#: The file naming the control endpoint, inside the served directory.
MARKER = ".kraftsim-serve"
#: Wall seconds a command waits to connect, and for the server to carry it out.
CONNECT_TIMEOUT_S, REPLY_TIMEOUT_S = 5.0, 600.0
#: Bytes a request or a reply may take at most.
MAX_MESSAGE = 16 * 1024 * 1024

@dataclass(frozen=True)
class Reply:
    stdout: str
    stderr: str
    code: int


# ---------------------------------------------------------------------------------- the client


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: The destinations of the served commands' arguments that name a path (the cluster
#: directory, `cluster run --timeline FILE`).
PATH_DESTS = ("dir", "cluster", "timeline")


def absolute_argv(parser: argparse.ArgumentParser, argv: Sequence[str], args: argparse.Namespace) -> list[str]:
    """`argv` with each relative path argument (PATH_DESTS) made absolute against this
    process's working directory, so the server runs it wherever it was started. The token
    that carried a path is found by parsing: the one whose absolute form changes that
    argument, and nothing else, is the one (a release named like the directory stays)."""
    out = list(argv)
    for dest in PATH_DESTS:
        value = getattr(args, dest, None)
        if not isinstance(value, str) or not value or os.path.isabs(value):
            continue
        absolute = os.path.abspath(value)
        expected = {**vars(args), dest: absolute}
        for i, token in enumerate(out):
            if token == value:
                candidate = absolute
            elif token.startswith("--") and token.endswith("=" + value):
                candidate = token[: len(token) - len(value)] + absolute
            else:
                continue
            trial = out[:i] + [candidate] + out[i + 1:]
            try:
                with contextlib.redirect_stderr(io.StringIO()):
                    parsed = parser.parse_args(trial)
            except (SystemExit, Exception):  # noqa: BLE001 - not the token: argparse refused the trial
                continue
            if vars(parsed) == expected:
                out, args = trial, parsed
                break
    return out


def serving_pid(directory: str | Path) -> int | None:
    """The process that serves `directory` now (its marker names a process that lives), or
    None: no marker, or one a killed server left."""
    try:
        pid = int(jsoninput.loads((Path(directory) / MARKER).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if _pid_alive(pid) else None


def forward(directory: str | Path, argv: Sequence[str]) -> Reply | None:
    """The served cluster's answer to a command on `directory` (`argv` with absolute paths,
    see `absolute_argv`); None when nothing serves it (no marker, or a stale one), so the
    command opens the directory itself."""
    try:
        info = jsoninput.loads((Path(directory) / MARKER).read_text())
        pid, port, token = int(info["pid"]), int(info["port"]), str(info["token"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _pid_alive(pid):
        return None
    request = json.dumps({"token": token, "argv": list(argv)}).encode() + b"\n"
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT_S)
    except OSError:
        return None  # nothing listens: the server is gone
    with sock:
        sock.settimeout(REPLY_TIMEOUT_S)
        sock.sendall(request)
        data = bytearray()
        while len(data) <= MAX_MESSAGE:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    try:
        reply = jsoninput.loads(bytes(data))
        return Reply(str(reply["stdout"]), str(reply["stderr"]), int(reply["code"]))
    except (ValueError, KeyError, TypeError):
        return Reply("", "kraftsim: error: the serving process gave no answer to the command\n", 1)


# ---------------------------------------------------------------------------------- the server


class ControlEndpoint:
    """The server side (see the module docstring). `carry_out(argv)` runs one command on the
    served directory, without blocking the loop, and returns what it printed and its exit code."""

    def __init__(self, directory: Path, carry_out: Callable[[Sequence[str]], Awaitable[Reply]]):
        self.directory = directory
        self.marker = directory / MARKER
        self.token = secrets.token_hex(16)
        self._carry_out = carry_out
        self._server: asyncio.AbstractServer | None = None
        #: Commands being carried out (closing waits for them: they hold the directory).
        self._running: set[asyncio.Task[Reply]] = set()
        self._one_at_a_time = asyncio.Lock()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        with contextlib.suppress(FileNotFoundError):
            self.marker.unlink()  # a stale one (the serving process was killed)
        fd = os.open(self.marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"pid": os.getpid(), "port": port, "token": self.token}, f)

    async def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.marker.unlink()
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._running:  # a command still has the directory: it finishes first
            await asyncio.wait(set(self._running), timeout=REPLY_TIMEOUT_S)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), CONNECT_TIMEOUT_S)
            request = jsoninput.loads(line[:MAX_MESSAGE])
            if not hmac.compare_digest(str(request.get("token", "")), self.token):
                return
            argv = [str(a) for a in request["argv"]]
            async with self._one_at_a_time:
                task = asyncio.ensure_future(self._carry_out(argv))
                self._running.add(task)
                try:
                    reply = await asyncio.shield(task)
                finally:
                    if task.done():
                        self._running.discard(task)
                    else:
                        task.add_done_callback(self._running.discard)
            writer.write(json.dumps({"stdout": reply.stdout, "stderr": reply.stderr, "code": reply.code}).encode())
            await writer.drain()
        except (asyncio.TimeoutError, ValueError, KeyError, TypeError, AttributeError, ConnectionError):
            pass  # a client that does not speak this gets nothing
        finally:
            writer.close()


def captured(run: Callable[[], int]) -> Reply:
    """Run one command as it would run on its own, its output captured; a failure to open the
    directory again (serving ends) is the command's error line."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run()
    except Exception as e:  # noqa: BLE001 - reported to the client in one line
        err.write(f"kraftsim: error: {type(e).__name__}: {e}\n")
        code = 1
    return Reply(out.getvalue(), err.getvalue(), code)
