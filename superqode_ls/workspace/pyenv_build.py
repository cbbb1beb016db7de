"""An environment for a project that has none, made the way its developers
make it (pyenv_plan: ``uv.lock``, requirement files, the project with its
test extras and groups), with an interpreter that matches its
``.python-version`` / ``requires-python`` when one is installed.

It goes to ``$SUPERQODE_HOME/envs/<key>`` (envcache: the key hashes every
file the plan reads, the interpreter and the project it is for), is built once by a confined step
(writes allowed to that folder, a temporary copy of the sandbox and uv's
cache for that key only), checked against its manifest before each use, and reused while
the key matches. Nothing is built when no role would use it. A build that
fails is a setup problem (``ProjectPython.setup``), never a finding.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import fcntl
import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name as _canonical

from ..config import Config, ConfigError, load_config, superqode_home
from ..errors import SuperQodeError
from ..runtime import Runtime
from . import envcache
from .extras import needs
from .git import git_out
from .pyenv import ProjectPython, discover, env_python, own_python, probe
from .pyenv_conflict import conflicting, is_conflict, narrower, short
from .pyenv_declared import declared_requirements, missing_in_own
from .pyenv_disk import disk_full, failure_words, is_disk_full
from .pyenv_failed import build_failed, clear_failure, last_failure
from .pyenv_interp import pick_interpreter, python_for
from .pyenv_leftout import (
    LEFT_OUT,
    MAX_LEFT_OUT,
    UNBUILDABLE,
    UNREADABLE,
    declared_name,
    left_out_note,
    metadata_dir,
    own_metadata,
    project_dropped,
)
from .pyenv_plan import Plan, make_plan, scm_version, static_metadata
from .pyenv_read import read_pyproject
from .pyenv_tox import tox_testenv
from .pyprojects import python_projects
from .pytest_addopts import installed

__all__ = ["build_env", "declared_requirements", "pick_interpreter", "resolve_python",
           "spawn_background_build"]

Emit = Callable[..., Any]
CONFIGURE = "set roles.python (superqode.yaml) or the editor's superqode.python to the project's interpreter"

async def resolve_python(
    project: Path,
    root: Path,
    config: Config,
    *,
    editor: str | None = None,
    environ: dict[str, str] | None = None,
    emit: Emit = lambda *a, **k: None,
    build: bool = True,
    runtime: Runtime | None = None,
    sub: str | None = None,
) -> ProjectPython:
    """The interpreter for this session's code-running roles (see pyenv).
    ``project`` is the user's folder (its environment), ``root`` the
    sandbox (the declarations are read there). ``build``: whether a role
    will run the project's code (no tests: nothing is built). ``runtime``:
    the front end's priority and CPUs for the build's tools. ``sub``: in a
    monorepo, the Python project's folder below them (pyprojects); None:
    the root's project, else the first one below it."""
    if sub is None:
        sub = (await asyncio.to_thread(python_projects, root))[0]
    found, tried = await asyncio.to_thread(
        discover, project / sub if sub else project, config.roles.python, editor, environ,
        config.sandbox.hide)
    if found is not None:
        return replace(found, folder=sub)
    passed_over = "; ".join(tried)
    plan = await asyncio.to_thread(make_plan, root, sub)
    # Where the declarations are: the project's folder, or the one above it
    # that declares for it.
    folder = root / plan.folder if plan is not None else root / sub
    reqs = await asyncio.to_thread(declared_requirements, folder)
    missing = await asyncio.to_thread(missing_in_own, [*reqs, *(plan.requirements if plan else ())])
    meta = await asyncio.to_thread(static_metadata, folder)
    own = functools.partial(own_python, folder=sub)
    # SuperQode's own Python serves when it has everything declared and the
    # project's metadata is known without building it; never over a lock
    # (its pinned versions are what the tests were written against).
    if plan is None or (not missing and not plan.locked
                        and (not plan.installable or meta is not None)):
        why = ("no project environment found; SuperQode's Python has every declared dependency"
               if reqs else "no project environment found and no dependencies declared")
        # Its metadata (importlib.metadata.version) without installing it.
        lent = await asyncio.to_thread(metadata_dir, *meta) if meta is not None else None
        return replace(own(_join(passed_over, why), tuple(tried)), metadata=lent)
    if not build:
        why = "no project environment found; none built (no role runs the project's code)"
        return own(_join(passed_over, why), tuple(tried))
    if config.roles.unit_test_command:
        why = ("no project environment found; roles.unit_test_command runs the tests, so none "
               "is built (set roles.python for the other roles)")
        return own(_join(passed_over, why), tuple(tried))
    if not config.roles.build_env:
        why = f"no project environment found and roles.build_env is off; {CONFIGURE}"
        return own(_join(passed_over, why), tuple(tried))
    built = await build_env(root, plan, config.roles.env_build_timeout_s, emit, runtime,
                            project=project, hide=config.sandbox.hide)
    if isinstance(built, ProjectPython):
        return replace(built, note=_join(passed_over, built.note or "") or None, tried=tuple(tried),
                       folder=sub)
    setup = f"could not build the project's environment from {plan.describe()}: {built}"
    return replace(own(_join(passed_over, f"{setup}; {CONFIGURE}"), tuple(tried)),
                   setup=setup)


def spawn_background_build(project: Path, nice: int = 0, sub: str = ""
                           ) -> tuple[subprocess.Popen, Path] | None:
    """Go on building ``project``'s environment without the session: a
    detached ``python -m superqode_ls.workspace.pyenv_build PROJECT`` (its
    own process group, so the session's end or a Ctrl-C in its terminal
    leaves it be), bounded by ``roles.env_build_timeout_s`` and confined as
    every build is. It reads the project's declarations where the session's
    sandbox read them (the same files in a quick run of the current state),
    so it fills the key the next run looks up. ``nice``: the session's
    steps below it for the build's tools (the terminal's 0, the editor's
    +10), as the session's own build had. Returns it and its log, or None
    when it could not be started."""
    log_path = superqode_home() / "logs" / "env-build.log"
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "superqode_ls.workspace.pyenv_build", str(project), str(nice),
                 *([sub] if sub else [])],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=str(project), start_new_session=True, close_fds=True)
    except OSError:
        return None
    return proc, log_path


async def build_in_background(project: Path, nice: int = 0, sub: str | None = None) -> int:
    """The detached builder's work (spawn_background_build): 0 when the
    environment is ready (built now or by another), 1 when it could not be
    built (the next run says why), 2 for a configuration it cannot read."""
    def emit(_type: str, **data: Any) -> None:
        print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%dT%H:%M:%SZ} {project}: "
              f"{data.get('message', _type)}", flush=True)

    try:
        config = load_config(project)
    except ConfigError as e:
        emit("progress", message=f"not built: {e}")
        return 2
    subs = await asyncio.to_thread(python_projects, project)
    sub = sub if sub in subs else subs[0]  # (a monorepo's project; by default the first)
    plan = await asyncio.to_thread(make_plan, project, sub)
    if plan is None:
        emit("progress", message="not built: nothing declared")
        return 0
    built = await build_env(project, plan, config.roles.env_build_timeout_s, emit,
                            Runtime(nice=nice), project=project, hide=config.sandbox.hide,
                            handed_over=True)
    if isinstance(built, ProjectPython):
        return 0
    emit("progress", message=f"not built: {built}")
    return 1


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _uv() -> str | None:
    """uv: the one installed with SuperQode, else on PATH."""
    beside = Path(sys.executable).with_name("uv")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    try:
        from uv import find_uv_bin  # the uv wheel's locator

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


async def build_env(root: Path, plan: Plan, timeout: float, emit: Emit,
                    runtime: Runtime | None = None, *, project: Path | None = None,
                    hide: Sequence[str] = (), handed_over: bool = False) -> ProjectPython | str:
    """The cached environment for ``plan`` (built now if needed), or why not.
    ``root``: the sandbox (what is built); ``project``: the user's folder it
    is for (the key's owner; without one, ``root``: an environment of its own).
    ``hide``: the user's ``sandbox.hide``, masked for the build and probes.
    ``handed_over``: the detached builder's, going on with a run's build. A
    failed build is not tried again for a while: its cause is the answer."""
    uv = _uv()
    if uv is None:
        return needs("uv")
    python, version, asked = await asyncio.to_thread(pick_interpreter, plan.python_request, uv,
                                                     hide)
    note = _join(asked or "", *plan.notes) or None  # said with every use (uv refused: pip)
    owner = Path(project if project is not None else root).resolve()
    # The interpreter by what it is, not how it was spelled: SuperQode's own
    # base reached through a link (another install of SuperQode, an editor's
    # launcher) or the same Python found on another PATH is one environment.
    key = await asyncio.to_thread(plan.key, root, f"{version}:{os.path.realpath(python)}",
                                  str(owner))
    target = envcache.envs_dir() / key
    try:
        envcache.envs_dir().mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create {envcache.envs_dir()}: {e.strerror}"
    def waiting() -> None:  # another build of it (a detached one) is under way
        emit("progress", message="environment: an earlier run is still building it (in the "
             f"background, from {plan.describe()}); waiting for that build to finish",
             building=True, source=plan.describe())

    async with _locked(envcache.envs_dir() / f"{key}.lock", waiting):
        cached = await asyncio.to_thread(_ready, target, emit, hide, handed_over)
        if cached is not None and await asyncio.to_thread(project_dropped, target, root, plan):
            cached = None  # an older build left the project out with its dependencies
        if cached is not None:
            emit("progress", message=f"environment: reusing {target} (cached, {plan.describe()})")
            return replace(cached, note=_join(note or "", left_out_note(target)) or None,
                           metadata=await asyncio.to_thread(own_metadata, target,
                                                            root / plan.folder, owner))
        if (failed := await asyncio.to_thread(last_failure, target, None, plan.inputs)) is not None:
            emit("progress", message=f"environment: not built: {failed}")
            return failed
        await asyncio.to_thread(envcache.discard, target)
        emit("progress", message=f"environment: building from {plan.describe()} into {target}",
             building=True, source=plan.describe())  # a quick run's bounded wait (qe/role_runs.py)
        why = await _install(root, plan, target, uv, python, timeout, runtime, owner, hide)
        if why is not None:
            await asyncio.to_thread(envcache.discard, target)
            # The Python it asked for and did not get is most often why.
            return await asyncio.to_thread(build_failed, target, root / plan.folder,
                                           plan.requirement_files, _join(asked or "", why))
        await asyncio.to_thread(clear_failure, target)
        await asyncio.to_thread(envcache.record, target)
        emit("progress", message=f"environment: built {target}")
        built = await asyncio.to_thread(_ready, target, emit, hide)
    if built is None:
        return f"the environment built in {target} does not start or has no pytest"
    return replace(built, note=_join(note or "", left_out_note(target)) or None,
                   metadata=await asyncio.to_thread(own_metadata, target, root / plan.folder,
                                                    owner))


def _ready(target: Path, emit: Emit, hide: Sequence[str] = (), handed_over: bool = False
           ) -> ProjectPython | None:
    """The environment at ``target`` when it is as built and starts; one
    that changed since it was built is discarded, unrun."""
    if not target.is_dir():
        return None
    changed = envcache.verify(target)
    if changed is not None:
        # No manifest is most often a build cut short (a quick run's budget,
        # Ctrl-C): uv's cache makes the new one quick. Either way, nothing
        # in it is run.
        if changed == envcache.NO_MANIFEST and handed_over:
            line = "environment: going on with the build the run handed over (what it downloaded is reused)"
        elif changed == envcache.NO_MANIFEST:
            line = ("environment: the last build of it was stopped before it finished; "
                    "building it again (what it downloaded is reused)")
        else:
            line = f"environment: {target}: discarded, {changed}; rebuilding"
        emit("progress", message=line)
        envcache.discard(target)
        return None
    found = probe(str(env_python(target)), "built", hide=hide)
    return found if isinstance(found, ProjectPython) and found.has_pytest else None


_SKIP_COPY = shutil.ignore_patterns(".git", ".venv", "venv", "node_modules", "__pycache__",
                                    ".superqode", ".tox", ".nox", ".mypy_cache", ".pytest_cache")


async def _install(root: Path, plan: Plan, target: Path, uv: str, python: str,
                   timeout: float, runtime: Runtime | None, owner: Path,
                   hide: Sequence[str] = ()) -> str | None:
    """Create and fill ``target`` from a copy of the sandbox, confined."""
    tmp = await asyncio.to_thread(envcache.scratch)
    aside = False  # its removal left to a thread (a cancelled build)
    try:
        src = tmp / "src"
        try:
            await asyncio.to_thread(shutil.copytree, root, src, symlinks=True, ignore=_SKIP_COPY)
        except shutil.Error as e:
            # copytree gathers each file's error; a full disk is said once.
            full = disk_full(str(e), "copying the project", [tmp])
            if full is None:
                raise
            return full
        except OSError as e:
            if is_disk_full(e):
                return disk_full(str(e), "copying the project", [tmp])
            raise
        target.mkdir(parents=True, exist_ok=True)
        cache = envcache.package_cache(target)
        cache.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTHON", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "CONDA"))}
        env.update(TMPDIR=str(tmp), UV_CACHE_DIR=str(cache), UV_PROJECT_ENVIRONMENT=str(target),
                   UV_PYTHON_DOWNLOADS="never", PIP_DISABLE_PIP_VERSION_CHECK="1")
        venv_py = str(env_python(target))
        env.update(plan.tool_env(tmp, venv_py))  # poetry/pdm export: their writes into tmp
        allow = [target, tmp, cache]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        why = await _step([uv, "venv", "-q", "--allow-existing", "--python", python, str(target)],
                          src, env, allow, deadline - loop.time(), timeout, runtime,
                          hide)
        if why is not None:
            return why
        as_of = await asyncio.to_thread(_last_commit, owner) if not plan.locked else None
        scm = await asyncio.to_thread(scm_version, owner)  # a VCS-versioned project builds
        if scm is not None:
            env.setdefault("SETUPTOOLS_SCM_PRETEND_VERSION", scm)

        async def fill() -> str | None:
            # Releases up to the last commit first; when those do not resolve
            # (an old project on a newer Python), today's.
            why = None
            for when in dict.fromkeys([as_of, None]):
                for cmd in plan.commands(uv, venv_py, src, when):
                    why = await _step(cmd, src / plan.cwd, env, allow, deadline - loop.time(), timeout,
                                      runtime, hide)
                    if why is not None:
                        break
                if why is None or "did not finish" in why:
                    break
            return why

        why = await fill()
        other = await asyncio.to_thread(python_for, why, uv, python, hide)
        if other is not None:
            # The pinned packages need another Python than the one chosen
            # (Django 6 needs 3.12, and nothing declares it): made again
            # with one that satisfies them, when one is installed.
            # Emptied here: the confined uv may write in it, not remove it.
            await asyncio.to_thread(_empty, target)
            why = await _step([uv, "venv", "-q", "--allow-existing", "--python", other,
                               str(target)],
                              src, env, allow, deadline - loop.time(), timeout, runtime, hide)
            why = why or await fill()
        # A package whose source build needs system libraries this machine
        # lacks (mysqlclient without MySQL's headers: a driver for a service
        # the default settings do not use): left out, said with every use;
        # a test that imports it fails as the environment's, not the code's.
        left: list[str] = []
        own_name = declared_name(src / plan.folder) if plan.deps_without_project else None
        while why is not None and len(left) < MAX_LEFT_OUT:
            unread = UNREADABLE.search(why)
            said = unread.group(1) if unread else ""
            bad = next((r for r in plan.requirement_files
                        if said == r or said.endswith(f"/{r}")), None)
            if bad is not None and len(plan.requirement_files) > 1:
                # kombu's requirements/dev.txt (GitHub zipball URLs of its
                # own libraries' development heads): the other files stand.
                plan = replace(plan, requirement_files=tuple(
                    r for r in plan.requirement_files if r != bad))
                left.append(f"{bad} file")
                why = await fill()
                continue
            m = UNBUILDABLE.search(why)
            if m is None and "did not finish" not in why and "no space left" not in why and (
                    narrow := narrower(plan.requirement_files, await asyncio.to_thread(
                        _tox_files, src / plan.folder))):
                # Files for other purposes (docs, an old Python, development
                # heads fetched with git) pin what the test files pin
                # differently or cannot be installed here: the files the
                # tests use (tox's test environment's) stand.
                dropped = [r for r in plan.requirement_files if r not in narrow]
                if is_conflict(why):
                    pair = conflicting(src / plan.folder, plan.requirement_files, why)
                    left.append(f"{','.join(dropped)} conflict {pair or short(why)}")
                else:
                    left.append(f"{','.join(dropped)} failed {short(why)}")
                plan = replace(plan, requirement_files=narrow)
                why = await fill()
                continue
            if m is None or m.group(1) in left or f"{m.group(1)} project" in left:
                break
            if own_name is not None and _canonical(m.group(1)) == _canonical(own_name):
                # The project itself (keyring's backend downloads its licence
                # text while building): its dependencies, without it.
                plan = replace(plan, own_deps=True)
                left.append(f"{m.group(1)} project")
            else:
                left.append(m.group(1))
                excluded = [n for n in left if " " not in n]
                (tmp / "excludes.txt").write_text("\n".join(excluded) + "\n", encoding="utf-8")
                env["UV_EXCLUDE"] = str(tmp / "excludes.txt")
            why = await fill()
        if why is not None and is_conflict(why):
            # One line naming the two files (or the resolver's conclusion),
            # not its whole explanation.
            pair = conflicting(src / plan.folder, plan.requirement_files, why)
            return ("the requirements conflict: " + (f"{pair} pin it differently" if pair
                                                     else short(why)))
        if why is not None:
            return why
        if left:
            (target / LEFT_OUT).write_text("\n".join(left) + "\n", encoding="utf-8")
        facts = probe(venv_py, "built", hide=hide)
        add = [uv, "pip", "install", "-q", "--python", venv_py, "--compile-bytecode",
               *(["--exclude-newer", as_of] if as_of else [])]
        if isinstance(facts, ProjectPython) and not facts.has_pytest:
            # Nothing the project declares brings pytest: the runner is added.
            why = await _step([*add, "pytest"], src, env, allow, deadline - loop.time(), timeout,
                              runtime, hide)
            if why is not None:
                return why
        if isinstance(facts, ProjectPython) and (
                lacking := [d for d in plan.plugins if d not in installed(facts.prefix, [d])]):
            # The plugins the project's addopts uses and nothing declares
            # (pyload's pytest-cov). Not installable here (offline): the test
            # run leaves their options out and says so; the build stands.
            await _step([*add, *lacking], src, env, allow, deadline - loop.time(), timeout,
                        runtime, hide)
        return None
    except asyncio.CancelledError:
        # Stopped (a quick run handing the build over): the scratch copy of
        # the project (thousands of files on a large one) is removed beside
        # what follows, not before it (the hand-over took 12 s on sqlalchemy
        # at load 20 and the session ran out of time); the process still
        # waits for it before it exits.
        threading.Thread(target=shutil.rmtree, args=(tmp, True), name="env-scratch").start()
        aside = True
        raise
    finally:
        if not aside:
            await asyncio.to_thread(shutil.rmtree, tmp, True)


def _tox_files(folder: Path) -> tuple[str, ...]:
    """The requirement files tox's test environment installs."""
    tox = tox_testenv(folder, read_pyproject(folder))
    return tuple(tox.requirement_files) if tox is not None else ()


def _last_commit(project: Path) -> str | None:
    """The day after the checkout's last commit (UTC, RFC 3339), or None
    outside git: unpinned requirements resolve as they did for the
    project's developers then, not to a release that came out since.
    Asked of the user's project, never of the sandbox: git there would
    find the session's own git dir, whose config (``log.showSignature``
    with a ``gpg.program`` of its own, on a commit it made) git would run
    here, outside the barrier. No signature is checked either way."""
    try:
        out = git_out(["log", "-1", "--no-show-signature", "--format=%ct"], project)
        stamp = int(out.strip())
    except (SuperQodeError, OSError, ValueError):
        return None
    day = datetime.datetime.fromtimestamp(stamp, datetime.UTC) + datetime.timedelta(days=1)
    return day.strftime("%Y-%m-%dT%H:%M:%SZ")


async def _step(cmd: list[str], cwd: Path, env: dict[str, str], allow: list[Path], left: float,
                timeout: float, runtime: Runtime | None, hide: Sequence[str] = ()) -> str | None:
    res = await envcache.run_confined(cmd, cwd, env, allow, timeout=max(1.0, left),
                                      runtime=runtime, hide=hide)
    words = [Path(cmd[0]).name, *cmd[1:3]]
    if "-m" in cmd[:3]:  # python -I -m pip install: said as "pip install"
        words = cmd[cmd.index("-m") + 1:cmd.index("-m") + 3]
    elif cmd[1:3] == ["tool", "run"] and "export" in cmd:  # the lock's tool, fetched by uv
        words = [cmd[cmd.index("export") - 1], "export (uv tool run)"]
    what = " ".join(words)
    if res.timed_out:
        return f"{what} did not finish in {timeout:.0f} s"
    if res.returncode != 0:
        full = disk_full(f"{res.stderr}\n{res.stdout}", what, allow)
        if full is not None:
            return full
        shown = failure_words(res.stderr or res.stdout)
        return f"{what}: {shown or f'exit {res.returncode}'}"
    return None


@contextlib.asynccontextmanager
async def _locked(path: Path, waiting: Callable[[], None] = lambda: None):
    """An exclusive file lock, waited for without blocking the event loop;
    ``waiting`` is called once when another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    told = True
                    waiting()
                await asyncio.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing releases the lock


if __name__ == "__main__":  # the detached builder (spawn_background_build)
    sys.exit(asyncio.run(build_in_background(Path(sys.argv[1]).resolve(), int(sys.argv[2]),
                                             *sys.argv[3:4])))
