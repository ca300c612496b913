"""Cluster commands on a served directory (contract 7): while `kraftsim serve DIR` runs,
`kraftsim cluster status|crash|...`, `features --cluster DIR` and `topics --cluster DIR` are
carried out by the server instead of opening DIR themselves (the server holds it).

The server listens on a 127.0.0.1 port and writes DIR/.kraftsim-serve (mode 0600): its pid,
the port and a random token. A command that finds the file sends its argv and cwd with the
token; the server runs it on its loop's thread, between simulation steps, with the very code
the command runs on its own: it saves and closes its Simulation, runs the command on the
directory, opens the directory again and lets the listeners follow. What the command printed
and its exit code go back. A file left by a server that was killed (its pid gone, or nothing
listening) is ignored. Every wait is bounded.
"""

from __future__ import annotations

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


def forward(directory: str | Path, argv: Sequence[str]) -> Reply | None:
    """The served cluster's answer to a command on `directory`; None when nothing serves it
    (no marker, or a stale one), so the command opens the directory itself."""
    if os.environ.get("KRAFTSIM_SERVED_INSIDE"):
        return None  # the server itself running the command
    try:
        info = json.loads((Path(directory) / MARKER).read_text())
        pid, port, token = int(info["pid"]), int(info["port"]), str(info["token"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _pid_alive(pid):
        return None
    request = json.dumps({"token": token, "argv": list(argv), "cwd": os.getcwd()}).encode() + b"\n"
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
        reply = json.loads(bytes(data))
        return Reply(str(reply["stdout"]), str(reply["stderr"]), int(reply["code"]))
    except (ValueError, KeyError, TypeError):
        return Reply("", "kraftsim: error: the serving process gave no answer to the command\n", 1)


# ---------------------------------------------------------------------------------- the server


class ControlEndpoint:
    """The server side (see the module docstring). `carry_out(argv)` runs one command on the
    served directory and returns its exit code (the endpoint captures its output); `after`
    runs once it is done (the listeners follow the nodes)."""

    def __init__(self, directory: Path, carry_out: Callable[[Sequence[str]], int],
                 after: Callable[[], Awaitable[None]]):
        self.directory = directory
        self.marker = directory / MARKER
        self.token = secrets.token_hex(16)
        self._carry_out = carry_out
        self._after = after
        self._server: asyncio.AbstractServer | None = None

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

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), CONNECT_TIMEOUT_S)
            request = json.loads(line[:MAX_MESSAGE])
            if not hmac.compare_digest(str(request.get("token", "")), self.token):
                return
            argv = [str(a) for a in request["argv"]]
            reply = self.run(argv, str(request.get("cwd", ".")))
            await self._after()
            writer.write(json.dumps({"stdout": reply.stdout, "stderr": reply.stderr, "code": reply.code}).encode())
            await writer.drain()
        except (asyncio.TimeoutError, ValueError, KeyError, TypeError, AttributeError, ConnectionError):
            pass  # a client that does not speak this gets nothing
        finally:
            writer.close()

    def run(self, argv: Sequence[str], cwd: str) -> Reply:
        """Carry out one command as it would run on its own, its output captured."""
        out, err = io.StringIO(), io.StringIO()
        here = os.getcwd()
        os.environ["KRAFTSIM_SERVED_INSIDE"] = "1"
        try:
            os.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = self._carry_out(argv)
        except Exception as e:  # the directory could not be opened again: serving ends
            err.write(f"kraftsim: error: {type(e).__name__}: {e}\n")
            code = 1
        finally:
            os.chdir(here)
            os.environ.pop("KRAFTSIM_SERVED_INSIDE", None)
        return Reply(out.getvalue(), err.getvalue(), code)
