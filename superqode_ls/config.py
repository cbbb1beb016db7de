"""Configuration: ``$SUPERQODE_HOME/config.yaml`` (user) <- ``superqode.yaml``
(project) <- CLI flags / editor settings, each layer validated on its own so an
error can name the file it came from.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import EXIT_USAGE, SuperQodeError

PROJECT_FILE = "superqode.yaml"
USER_FILE = "config.yaml"


class ConfigError(SuperQodeError):
    """A one-line, user-facing configuration error (exit code 2)."""

    exit_code = EXIT_USAGE


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)


class WorkspaceConfig(Section):
    isolation: Literal["auto", "worktree", "snapshot"] = "auto"
    copy_uncommitted: bool = True
    keep_gitignored: list[str] = Field(default_factory=list)
    keep_gitignored_mode: Literal["copy", "symlink"] = "copy"
    exclude_patterns: list[str] = Field(default_factory=list)
    max_size_mb: float = Field(default=1024, gt=0)
    cleanup_after_hours: float = Field(default=24, gt=0)
    # A finished sandbox is parked for the next session of the repository
    # (reset to the new state and proved), up to warm_pool of them.
    warm_sandboxes: bool = True
    warm_pool: int = Field(default=2, ge=0, le=8)
    # Refuse to start a session below this protection (docs/safety.md, levels):
    # true = namespaces + Landlock, "landlock" = at least the Landlock barrier.
    require_barrier: bool | Literal["landlock"] = False
    detached_worktree_idle_days: float = Field(default=30, gt=0)
    # QE runs whose reports, logs and fix patches stay in
    # .superqode/qe-artifacts (older ones are removed as a run ends); 0 keeps
    # all. Recovered work and `exec` patches are never removed this way.
    keep_artifact_runs: int = Field(default=30, ge=0)
    branch_worktree_idle_days: float = Field(default=90, gt=0)


# Masked (an empty folder, an empty file) for every process of a session:
# credentials, keyrings, cloud and cluster logins, browser profiles.
# ``sandbox.hide`` adds to this list; it never shortens it.
DEFAULT_HIDDEN: tuple[str, ...] = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.config/gh",
    "~/.kube", "~/.docker", "~/.netrc", "~/.pypirc", "~/.git-credentials",
    "~/.config/git/credentials", "~/.local/share/keyrings", "~/.password-store",
    "~/.mozilla", "~/.config/google-chrome", "~/.config/chromium", "~/.config/BraveSoftware",
    "~/.vault-token", "~/.npmrc", "~/.terraform.d", "~/.config/hub",
)


class SandboxConfig(Section):
    # none: the session's processes have a loopback of their own and nothing
    # else; host: the machine's network (an opt-in, shown in the report).
    network: Literal["none", "host"] = "none"
    # More paths to mask ("~/" is your home), on top of DEFAULT_HIDDEN.
    hide: list[str] = Field(default_factory=list)

    @field_validator("hide")
    @classmethod
    def _absolute(cls, v: list[str]) -> list[str]:
        for p in v:
            if not p.startswith(("/", "~/")):
                raise ValueError(f"{p!r}: a path starting with / or ~/")
        return v


class GitGuardConfig(Section):
    enabled: bool = True
    allow: list[str] = Field(default_factory=list)
    block: list[str] = Field(default_factory=list)


class BudgetConfig(Section):
    quick: float = Field(default=60, gt=0)
    deep: float = Field(default=1800, gt=0)


# Where code is not the product: findings there are shown one level lower,
# with the reason, never dropped (qe.path_classes; docs/roles.md).
DEFAULT_PATH_CLASSES: dict[str, list[str]] = {
    # test-*/: a test environment or test app folder (scripts/test-environments/);
    # tests_*/, *_tests/: a second test tree (dynaconf's tests_functional/)
    # testapp/: a Django library's app for its tests (guardian/testapp/)
    # tests.py: a Django app's tests module (babybuddy's api/tests.py; its tests_*.py sit
    # under tests/, and a package's tests_helpers.py elsewhere is product code)
    "tests": ["tests/", "test/", "testing/", "test-*/", "tests-*/", "tests_*/", "*_tests/",
              "testapp/", "test_*.py", "*_test.py", "tests.py", "testsettings.py",
              "conftest.py"],
    "fixtures": ["fixtures/", "testdata/", "test_data/"],
    "docs": ["docs/", "doc/", "*.rst", "*.md"],
    # demos/: scripts that show the API (paramiko's), with their own demo keys;
    # a library's sample or example site beside it (django-taggit's
    # sample_taggit/, django-guardian's example_project/)
    "examples": ["examples/", "example/", "demos/", "demo/", "example_*/", "examples_*/",
                 "*_example/", "*_examples/", "sample/", "samples/", "sample_*/", "*_sample/",
                 "demo_*/", "*_demo/"],
    # the project's own dev tooling: runs on a developer's machine, not shipped
    # (not tasks.py / tasks/: in a Celery app that is the product)
    "tooling": ["noxfile.py", "fabfile.py", "bench/", "benchmarks/", "bench.py"],
    # another project's code copied in (bleach's _vendor/html5lib): fixed
    # upstream, not here (not vendor/: in a shop that is the sellers' app)
    "vendored": ["_vendor/", "_vendored/", "vendored/", "third_party/", "thirdparty/",
                 "_extern/"],
}


class QEConfig(Section):
    quick_roles: list[str] = Field(
        default_factory=lambda: ["security_tester", "lint_tester", "unit_tester"]
    )
    deep_roles: list[str] = Field(
        default_factory=lambda: [
            "security_tester",
            "lint_tester",
            "type_tester",
            "unit_tester",
            "mutation_tester",
            "test_generator",
        ]
    )
    confidence_threshold: float = Field(default=0.7, ge=0, le=1)
    fail_on: Literal["critical", "high", "medium", "low", "info", "never"] = "high"
    git_guard: GitGuardConfig = Field(default_factory=GitGuardConfig)
    budgets: BudgetConfig = Field(default_factory=BudgetConfig)
    baseline: str | None = None
    # A pattern ending in "/" is a folder anywhere in the path, one without "/"
    # a file name, any other the whole relative path (fnmatch). {} turns it off.
    path_classes: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_PATH_CLASSES.items()}
    )
    # What is shown by default: "evidence" shows a static finding only with
    # strong evidence (code that fails when it runs, a traced flow, a
    # confirmed secret...) and makes the rest "advisory:" noise, one click
    # away (qe/default_view.py); "all" shows every finding no other rule
    # made noise.
    default_view: Literal["evidence", "all"] = "evidence"
    # Rules that never make the verdict "fail" whatever their severity:
    # an assert in library code is worth a look, not a failed build.
    never_fail: list[str] = Field(default_factory=lambda: ["B101"])
    # Quick mode runs the unit tests only when the last run took less than this.
    quick_unit_test_max_s: float = Field(default=20, gt=0)
    # Fixes verified per session (most severe findings first); the rest are
    # offered "not verified". Each round re-runs a tool, and tests, once.
    verify_max_fixes: int = Field(default=200, ge=0)
    # CI: a role that errored or was ineffective (an agent whose model called
    # no tool) fails the run with exit 3 instead of only spoiling the verdict.
    fail_on_error: bool = False


WORKERS_ENV = "SUPERQODE_WORKERS"  # forces execution.workers (tests, CI, benches)


class ExecutionConfig(Section):
    max_parallel_roles: int = Field(default=3, ge=1, le=64)
    # Processes a role splits its work over (mutation workers, bandit
    # shards); None = the CPUs tools may use. $SUPERQODE_WORKERS overrides:
    # a 2-CPU machine can run the code paths of a 16-CPU one.
    workers: int | None = Field(default=None, ge=1, le=64)
    role_timeout_s: float | None = Field(default=None, gt=0)


class ProviderConfig(Section):
    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = Field(default=60, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    # First retry waits this long, doubling each time (capped at 30 s).
    retry_backoff_s: float = Field(default=1.0, ge=0)
    input_cost_per_1k: float = Field(default=0, ge=0)
    output_cost_per_1k: float = Field(default=0, ge=0)
    # Sent with every request: without it some servers generate until the
    # request times out (docs/agents.md).
    max_tokens: int = Field(default=2048, ge=1)
    # Sent whenever tools are offered; some servers read a missing value as "none".
    tool_choice: Literal["auto", "required", "none"] = "auto"
    # Streamed answers let a cancel or timeout close the connection, which
    # stops servers that honour a disconnect from generating on.
    stream: bool = True


Permission = Literal["allow", "ask", "deny"]


class AgentConfig(Section):
    provider: str | None = None
    fallback_provider: str | None = None
    max_turns: int = Field(default=30, ge=1)
    max_tokens: int = Field(default=200_000, ge=1)
    max_seconds: float = Field(default=600, gt=0)
    permissions: dict[str, Permission] = Field(
        default_factory=lambda: {
            "read_file": "allow",
            "list_files": "allow",
            "search": "allow",
            "write_file": "allow",
            "edit_file": "allow",
            "run_shell": "ask",
            "report_finding": "allow",
            "propose_fix": "allow",
        }
    )
    shell_timeout_s: float = Field(default=120, gt=0)
    shell_output_cap: int = Field(default=20_000, gt=0)
    # The agent roles' worker: None, the built-in loop over `providers`; or
    # the name of an ACP agent under `agents:` (docs/agents.md).
    worker: str | None = None


class AcpAgentConfig(Section):
    """A coding agent spoken to over the Agent Client Protocol: the command
    that starts its ACP server on stdio (e.g. ``[claude-code-acp]``)."""

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    # Folders of the agent's own state it must write (its login, its logs:
    # `~/.claude` for Claude Code), added to what the sandbox's barrier lets
    # it write. Only existing folders are added.
    writable: list[str] = Field(default_factory=list)
    # Variables passed from SuperQode's own environment, which every other
    # process of a session is scrubbed of (its API key: ANTHROPIC_API_KEY).
    pass_env: list[str] = Field(default_factory=list)
    # The agent talks to its model: by default it keeps the host's network
    # while the rest of the session has none (`none` for a local model
    # reached otherwise, or an agent that needs no network).
    network: Literal["host", "none"] = "host"


class RoleOptions(Section):
    # The interpreter (or environment folder) the project's code runs with;
    # None = discover it (see workspace/pyenv.py).
    python: str | None = None
    # With no environment found: build one from the declared dependencies
    # into $SUPERQODE_HOME/envs (uv, the way the project declares it; workspace/pyenv_plan.py).
    build_env: bool = True
    env_build_timeout_s: float = Field(default=600, gt=0)
    unit_test_command: list[str] | None = None
    mutation_max_mutants: int = Field(default=200, ge=1)
    mutation_timeout_factor: float = Field(default=3.0, gt=0)
    # Seconds the mutation tester may spend running mutants; files it did not
    # finish say how far it got, and the next run continues them.
    mutation_time_budget_s: float = Field(default=900, gt=0)
    test_generator_max_functions: int = Field(default=40, ge=1)


class Config(Section):
    mode: Literal["quick", "deep"] = "quick"
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    qe: QEConfig = Field(default_factory=QEConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    providers: list[ProviderConfig] = Field(default_factory=list)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    agents: dict[str, AcpAgentConfig] = Field(default_factory=dict)
    roles: RoleOptions = Field(default_factory=RoleOptions)
    trusted_folders: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_worker(self) -> Config:
        w = self.agent.worker
        if w is not None and w not in self.agents:
            known = ", ".join(self.agents) or "none configured"
            raise ValueError(f"agent.worker {w!r} is not in agents: ({known})")
        return self

    def provider(self, name: str | None) -> ProviderConfig | None:
        for p in self.providers:
            if p.name == name:
                return p
        return None


def superqode_home() -> Path:
    env = os.environ.get("SUPERQODE_HOME")
    return Path(env).expanduser() if env else Path.home() / ".superqode"


def _format_error(source: str, err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        allowed = _allowed_keys(first["loc"][:-1])
        return f"{source}: {loc}: unknown key (allowed: {', '.join(allowed)})"
    got = first.get("input")
    got_text = "" if isinstance(got, (dict, list)) else f" (got {got!r})"
    msg = first["msg"]
    ctx = first.get("ctx") or {}
    if "expected" in ctx:
        msg = f"must be {ctx['expected']}"
    return f"{source}: {loc}: {msg}{got_text}"


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    model: Any = Config
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return []
        ann = field.annotation
        args = getattr(ann, "__args__", None)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        elif args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            model = args[0]
        else:
            return []
    return sorted(model.model_fields)


def _read_yaml(path: Path) -> dict[str, Any]:
    # Imported when a file is read: most runs have none, and every CLI start
    # would pay for the YAML parser's import (20-70 ms).
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}: invalid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping of settings")
    return data


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def defaults() -> Config:
    """``Config()`` -- the same values, unset as there -- without building the
    validators of every section: with no file and no override (most runs)
    there is nothing to validate, and the build is 35-45 ms of a new
    process's start. A value assigned later is validated as ever
    (``validate_assignment``), which builds that section's validator then."""
    return _construct(Config)


def _construct(cls: type[Section]) -> Any:
    sections = {
        name: _construct(f.default_factory)
        for name, f in cls.model_fields.items()
        if isinstance(f.default_factory, type) and issubclass(f.default_factory, Section)
    }
    made = cls.model_construct(**sections)
    # As Config() leaves them: nothing was given (exclude_unset, model_fields_set).
    object.__setattr__(made, "__pydantic_fields_set__", set())
    return made


def validate_layer(data: dict[str, Any], source: str) -> None:
    try:
        Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format_error(source, e)) from None


def load_config(
    project: Path | None = None,
    overrides: dict[str, Any] | None = None,
    *,
    overrides_source: str = "command line",
) -> Config:
    """Merged, validated configuration for ``project``; raises ConfigError."""
    layers: list[tuple[dict[str, Any], str]] = []
    user_file = superqode_home() / USER_FILE
    if user_file.is_file():
        layers.append((_read_yaml(user_file), str(user_file)))
    if project is not None:
        proj_file = Path(project) / PROJECT_FILE
        if proj_file.is_file():
            layers.append((_read_yaml(proj_file), str(proj_file)))
    workers = os.environ.get(WORKERS_ENV, "").strip()
    if workers:
        layers.append(({"execution": {"workers": workers}}, f"${WORKERS_ENV}"))
    if overrides:
        layers.append((overrides, overrides_source))
    if not layers:
        return defaults()
    merged: dict[str, Any] = {}
    for data, source in layers:
        validate_layer(data, source)
        merged = _deep_merge(merged, data)
    try:
        return Config.model_validate(merged)
    except ValidationError as e:  # pragma: no cover - layers validated above
        raise ConfigError(_format_error("configuration", e)) from None
