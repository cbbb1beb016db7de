"""An agent role against llama-cpp-python's own server, ``python -m
llama_cpp.server`` with its defaults (the model's own chat template, n_ctx
2048, streaming) and SmolLM2-135M: the setup issue 30 found failing.

With its defaults that server renders SmolLM2's own template, which has no
tools section, and parses no tool calls out of the answer: the model answers
in prose, so the role must end ``ineffective`` with the reason (never ``pass``),
through the CLI with ``--fail-on-error`` exit 3, and the project unchanged.

scripts/setup-llama.sh installs the server in a venv of its own (libllama
built once as shared libraries, the Python package from the sdist without a
second compile); skipped, with the reason, when that was impossible.
"""

from __future__ import annotations

import json

import pytest

from superqode_ls.cli import main as cli_main
from superqode_ls.workspace.fingerprint import compare, take_fingerprint

from .llama_server import LlamaCppPythonServer, require_llama_cpp_python

CALC = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"


@pytest.fixture
def server(tmp_path):
    require_llama_cpp_python()
    s = LlamaCppPythonServer(log=tmp_path / "llama-cpp-python.log")
    yield s
    s.close()


def test_a_role_on_its_defaults_is_never_a_pass(server, make_repo, capsys):
    project = make_repo({"calc.py": CALC})
    # Only what a user must give: where, which model (the server lists its
    # path as the name), and room for a slow machine; max_tokens 96 keeps
    # each prose answer short.
    (project / "superqode.yaml").write_text(
        f"providers:\n  - {{name: local, base_url: '{server.base_url}', "
        f"model: {json.dumps(server.model)}, timeout: 300, max_tokens: 96}}\n"
        "agent:\n  max_turns: 3\n")
    before = take_fingerprint(project)
    code = cli_main(["run", str(project), "--mode", "deep", "-r", "agent_unit_tester",
                     "--fail-on-error"])
    out = capsys.readouterr()
    [line] = [x for x in out.out.splitlines() if x.startswith("role agent_unit_tester")]
    assert line.startswith("role agent_unit_tester: ineffective (the model answered without "
                           "calling a tool"), (line, server.tail())
    assert "verdict: conditional" in out.out and code == 3
    # It did answer: the tokens it spent are in the summary.
    assert any(x.startswith("model: ") for x in out.out.splitlines())
    assert "Traceback" not in out.err and "not listed" not in out.out
    assert [d for d in compare(before, take_fingerprint(project))
            if ".superqode" not in d and "superqode.yaml" not in d] == []
