"""`expconsole serve` in a child process, for tests and scripts that need a server of their own.

A child has its own moto state, environment and AWS clients, so it neither disturbs nor is
disturbed by what runs in the parent (tests that use moto's in-process mocks reset moto's
global state and set AWS variables, which would pull the rug from an in-process server).
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

_BANNER_END = "Try:"


class ServeProcess:
    """Runs `expconsole serve <args>` and reads its banner: `url`, `api_key`, `server_secret`.

    `stderr` is a file for the server's log (default: inherited); `env` its environment (default:
    this process's). The process listens once
    `start()` returns; `stop()` sends SIGINT (Ctrl-C) and returns the exit status.
    """

    def __init__(
        self,
        *serve_args: str,
        cwd: str | Path | None = None,
        stderr: Path | None = None,
        start_timeout: float = 60.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.command = [sys.executable, "-m", "expconsole_tools.cli", "serve", *serve_args]
        self.cwd = cwd
        self.stderr_path = stderr
        self.start_timeout = start_timeout
        self.env = env
        self.banner: list[str] = []
        self.url = ""
        self.api_key = ""
        self.server_secret = ""
        self.backend_endpoint = ""
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[Any] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    @property
    def pid(self) -> int:
        """The server's process id (its sandboxes are its child processes)."""
        assert self._process is not None, "not started"
        return self._process.pid

    def start(self) -> ServeProcess:
        """Start the server and wait for its banner; RuntimeError (with its output) if it fails."""
        self._stderr = self.stderr_path.open("w") if self.stderr_path else None
        self._process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        threading.Thread(target=self._read_stdout, name="expconsole-serve-stdout", daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        while not self.banner or not self.banner[-1].startswith(_BANNER_END):
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                status = self.stop(signal.SIGTERM)
                log = self.stderr_path.read_text()[-2000:] if self.stderr_path else "(inherited)"
                raise RuntimeError(f"expconsole serve did not start (exit {status}): {self.banner} {log}")
            self.banner.append(line)
        self._parse_banner()
        return self

    def _read_stdout(self) -> None:
        """Queue lines until the banner is complete, then keep draining so the child never blocks."""
        assert self._process is not None and self._process.stdout is not None
        banner_done = False
        for raw in self._process.stdout:
            if not banner_done:
                line = raw.rstrip("\n")
                self._lines.put(line)
                banner_done = line.startswith(_BANNER_END)
        self._lines.put(None)

    def _parse_banner(self) -> None:
        for line in self.banner:
            label, _, value = line.partition(":")
            value = value.strip()
            if label == "Console API":
                self.url = value.removesuffix("/console/v1")
            elif label == "Console key (SERVICE-API-KEY)":
                self.api_key = value
            elif label == "Server secret (SERVICE-API-KEY)":
                self.server_secret = value
            elif label == "Backend" and value.startswith("moto at "):
                self.backend_endpoint = value.removeprefix("moto at ").split(" ")[0]

    def stop(self, signum: int = signal.SIGINT, timeout: float = 15.0) -> int:
        """Signal the server to stop and wait; kills it (and raises TimeoutError) past `timeout`."""
        process, self._process = self._process, None
        if process is None:
            return 0
        try:
            if process.poll() is None:
                process.send_signal(signum)
            try:
                return process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise TimeoutError(f"expconsole serve did not stop within {timeout}s") from None
        finally:
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
