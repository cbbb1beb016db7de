"""namespaces.py without starting a session: the environment scrub, the
masks, the command line bwrap gets, the levels and the configuration."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from superqode_ls.config import Config, ConfigError, validate_layer
from superqode_ls.workspace import landlock, namespaces
from tests.safety_helpers import WAIT_FOR_GROUP_NICE


def test_scrub_drops_keys_tokens_and_desktop_and_keeps_the_rest():
    env = {"OPENAI_API_KEY": "a", "my_service_token": "b", "DB_PASSWORD": "c",
           "AWS_PROFILE": "d", "GOOGLE_APPLICATION_CREDENTIALS": "e", "SSH_AUTH_SOCK": "f",
           "DISPLAY": ":0", "DBUS_SESSION_BUS_ADDRESS": "g", "GITHUB_TOKEN": "h",
           "CUSTOM_KEY_VAR": "i", "PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8",
           "PYTHONPATH": "x", "TOKENIZERS_PARALLELISM": "false"}
    out = namespaces.scrub_env(env, {"CUSTOM_KEY_VAR"})
    assert out == {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "PYTHONPATH": "x",
                   "TOKENIZERS_PARALLELISM": "false"}


def test_hidden_paths_cover_both_homes_the_config_and_the_desktop(tmp_path):
    config = Config.model_validate({"sandbox": {"hide": ["~/notes", "/srv/keys"]}})
    paths = namespaces.hidden_paths(config, {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": "/run/u"})
    assert str(tmp_path / ".ssh") in paths and str(tmp_path / "notes") in paths
    assert "/srv/keys" in paths and "/run/u" in paths and "/tmp/.X11-unix" in paths


def test_wrap_binds_then_masks_then_rebinds_a_session_folder_under_a_mask(tmp_path, monkeypatch):
    secret = tmp_path / "run"
    (secret / "sq").mkdir(parents=True)
    (tmp_path / ".netrc").write_text("x")
    writable = str(secret / "sq")
    env = {"HOME": str(tmp_path), namespaces.SPEC_ENV: json.dumps(
        {"network": "none", "hide": [str(secret), str(tmp_path / ".netrc"), "/nope"]})}
    monkeypatch.setattr(namespaces, "_detected", ("/usr/bin/bwrap", None))
    argv = namespaces.wrap(["cmd"], [writable], env)
    assert argv[:4] == ["/usr/bin/bwrap", "--ro-bind", "/", "/"]
    first_bind = argv.index("--bind-try")
    mask = argv.index("--tmpfs")
    assert first_bind < mask < len(argv) - 1 - argv[::-1].index("--bind-try")
    assert ["--ro-bind", "/dev/null", str(tmp_path / ".netrc")] == argv[
        argv.index("/dev/null") - 1: argv.index("/dev/null") + 2]
    assert "/nope" not in argv and "--unshare-net" in argv and argv[-2:] == ["--", "cmd"]
    # The direct launcher gets the same plan, in the same order.
    monkeypatch.setattr(namespaces, "_detected", (namespaces.DIRECT, None))
    direct = namespaces.wrap(["cmd"], [writable], env)
    assert direct[1:4] == ["-I", "-S", namespaces._UNSHARE]
    assert direct[4:] == ["--bind", writable, "--hide-dir", str(secret),
                          "--hide-file", str(tmp_path / ".netrc"), "--bind", writable, "--", "cmd"]
    env[namespaces.SPEC_ENV] = json.dumps({"network": "host", "hide": []})
    assert "--share-net" in namespaces.wrap(["cmd"], [writable], env)
    monkeypatch.setattr(namespaces, "_detected", ("/usr/bin/bwrap", None))
    assert "--unshare-net" not in namespaces.wrap(["cmd"], [writable], env)


def test_levels_follow_the_layers(monkeypatch):
    monkeypatch.setattr(namespaces, "_detected", (None, "test"))
    expect = namespaces.LEVEL_GUARD if landlock.abi() is None else namespaces.LEVEL_LANDLOCK
    assert namespaces.protection_level() == expect
    config = Config.model_validate({"workspace": {"require_barrier": True}})
    if landlock.abi() is not None:
        assert "no namespace sandbox here (test" in namespaces.refusal(config)
        config.workspace.require_barrier = "landlock"
        assert namespaces.refusal(config) is None
    monkeypatch.setattr(namespaces, "_detected", ("/usr/bin/bwrap", None))
    if landlock.abi() is not None:
        host = Config.model_validate({"sandbox": {"network": "host"}})
        assert namespaces.protection_level(host) == "namespaces + Landlock (network: host)"
    monkeypatch.setattr(namespaces, "_detected", (namespaces.DIRECT, None))
    if landlock.abi() is not None:
        assert namespaces.protection_level() == "namespaces + Landlock (direct)"
        assert namespaces.protection_level(host) == (
            "namespaces + Landlock (direct, network: host)")


@pytest.mark.parametrize("bad", [{"sandbox": {"network": "lan"}}, {"sandbox": {"hide": ["rel"]}},
                                 {"sandbox": {"nope": 1}}])
def test_bad_sandbox_settings_are_one_line(bad):
    with pytest.raises(ConfigError) as e:
        validate_layer(bad, "superqode.yaml")
    assert "sandbox" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.skipif(not namespaces.active(), reason="no namespace backend on this system")
@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="no autogroup scheduling")
def test_a_tool_in_the_sandbox_keeps_its_nice_as_its_cpu_groups(tmp_path):
    """Either backend starts a new session, i.e. a new CPU group at nice 0:
    a tool started at nice 7 must not compete with the editor as an equal."""
    env = {**os.environ, landlock.ALLOW_ENV: json.dumps([str(tmp_path)])}
    # The supervisor lowers the group while the command runs (the kernel takes
    # one such write per 100 ms machine-wide): the tool waits until it has.
    cmd = namespaces.supervised(["sh", "-c", WAIT_FOR_GROUP_NICE], env)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False, env=env,
                          stdin=subprocess.DEVNULL, preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, 7))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == "7"
