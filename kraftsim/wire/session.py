"""One serving session: a cluster opened from its target, its listeners and clock on an
asyncio loop, and what happens at the end (the recording written, the directory saved).

The command runs the loop on its main thread; `kraftsim.serve` runs it on a background thread
and hands work to it with `call`, so the simulation is only ever touched by the loop's thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from kraftsim.sim import Simulation
from kraftsim.wire.control import ControlEndpoint, Reply, captured
from kraftsim.wire.served import ServedCluster
from kraftsim.wire.server import WireServer, serve_until_stopped
from kraftsim.wire.target import Opened

T = TypeVar("T")


class Commands(Protocol):
    """What carries out the cluster commands sent to a served directory (the CLI's own code)."""

    def run(self, argv: Sequence[str]) -> int:
        """Run the command as it runs on its own (it opens the directory); its exit code."""

    def step(self, argv: Sequence[str], code: int, stdout: str = "") -> tuple[str, dict[str, object]] | None:
        """The scenario step (op, args) the command made, ending with `code` after printing
        `stdout`, when it changed the cluster."""
#: How long (wall seconds) a caller waits for the loop thread to carry out one control.
CALL_TIMEOUT_S = 120.0


class Session:
    """A served cluster and its server (see the module docstring)."""

    def __init__(self, opened: Opened, *, host: str = "127.0.0.1", speed: float = 1.0, record: Path | None = None,
                 commands: Commands | None = None, auto_create_topics: bool = True):
        self.opened = opened
        self.commands = commands
        self.record = None if record is None else Path(record)
        self.served = ServedCluster(opened.sim, host, speed, recorder=opened.recorder if record is not None else None,
                                    auto_create_topics=auto_create_topics)
        self.server = WireServer(self.served)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    async def main(self, for_ms: int | None = None, ready: Callable[[], None] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        control = None
        if self.commands is not None:  # the directory's own commands come here while it is served
            control = ControlEndpoint(self.opened.directory, self.carry_out)
            await control.open()
        try:
            await serve_until_stopped(self.server, for_ms, ready)
        finally:
            if control is not None:
                await control.close()

    async def carry_out(self, argv: Sequence[str]) -> Reply:
        """One cluster command on the served directory: the cluster saved and closed, the
        command run on the directory as it runs on its own, on a worker thread (the listeners
        stay open and hold their requests meanwhile, however long a `cluster run` takes), the
        directory opened again (the nodes that run resume: the listeners of processes that ran
        before stay open and hold requests until each broker published its image again, those of
        processes the command stopped or restarted close and cut their connections), the
        listeners following, and the command recorded."""
        commands = self.commands
        assert commands is not None
        served = self.served
        at = served.sim.now_ms
        self.server.pause()
        try:
            served.sim.close()
            reply = await asyncio.to_thread(captured, lambda: commands.run(argv))
            try:
                served.sim = self.opened.sim = Simulation.open(self.opened.directory)
            except Exception as e:  # nothing left to serve
                self.server.stopping.set()
                return Reply(reply.stdout, reply.stderr + f"kraftsim: error: {type(e).__name__}: {e}\n", 1)
            served.anchor()
        finally:
            self.server.resume()
        if not self.server.stopping.is_set():
            await self.server.open_listeners()
        step = commands.step(argv, reply.code, reply.stdout)
        if step is not None:
            served.record(step[0], step[1], at)
        return reply

    def stop(self) -> None:
        """Ask the loop to stop (from any thread)."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.server.stopping.set)

    def finish(self) -> None:
        """After the loop ended: write the recording, save and close the cluster directory."""
        try:
            rec = self.served.recorder
            if rec is not None and self.record is not None:
                rec.finish(self.served.sim.now_ms)
                rec.write(self.record)
        finally:
            self.opened.close()

    # ------------------------------------------------------------------ in a background thread

    def start_thread(self, timeout_s: float = 60.0) -> None:
        """Serve on a background thread; returns once every listener accepts connections (or
        the bounded wait for them passed: WireServer.until_listening)."""
        ready = threading.Event()

        def run() -> None:
            try:
                asyncio.run(self.main(None, ready.set))
            except BaseException as e:  # reported to the caller of start_thread / close_thread
                self._error = e
                ready.set()

        self._thread = threading.Thread(target=run, name="kraftsim-serve", daemon=True)
        self._thread.start()
        if not ready.wait(timeout_s) or self._error is not None:
            self.close_thread()
            raise RuntimeError(f"kraftsim serve did not start: {self._error!r}")

    def call(self, fn: Callable[[ServedCluster], T]) -> T:
        """Run `fn(served)` on the loop's thread and return what it returned (or raise what it raised)."""
        assert self.loop is not None

        async def job() -> T:
            await self.server.resumed()  # a handed-over command has the directory: after it
            result = fn(self.served)
            await self.server.open_listeners()  # a node that went down or came up: its listener follows
            return result

        return asyncio.run_coroutine_threadsafe(job(), self.loop).result(CALL_TIMEOUT_S)

    def close_thread(self) -> None:
        self.stop()
        if self._thread is not None:
            self._thread.join(CALL_TIMEOUT_S)
        self.finish()


