"""A call that runs no shell is no command injection: an argument vector
(``exec_cmd([binary] + params)``, modoboa's doveadm call) is not a command
line, and a client's ``execute_command(f"CLUSTER {arg}", *args)`` in a
package that starts no process anywhere (redis-py) sends a protocol
command (qe/roles/_web_sinks.py ``built``, qe/noise_process.py). Their real
twins stay: a formatted string to the same helper, the same method where
the package runs it through a shell, and a helper the package does not
define (paramiko's ``exec_command``). Real files, the security role and
the whole noise filter."""

from __future__ import annotations

import ast

from superqode_ls.models import Severity
from superqode_ls.qe.roles._web import web_patterns
from tests.test_noise_operator import _filtered, _hits

_RULE = {"command-injection"}


def _web(source: str) -> set[tuple[str, int]]:
    return {(rule, node.lineno) for node, rule, *_ in web_patterns(ast.parse(source), "m.py", source)}


ARGV = '''import subprocess


def exec_cmd(cmd, **kwargs):
    return subprocess.Popen(cmd, **kwargs).communicate()


def doveadm_cmd(dpath, params):
    return exec_cmd([dpath] + params)


def doveadm_tuple(dpath, user):
    return exec_cmd(("sudo", "-u", user) + (dpath,))


def doveadm_line(dpath, user):
    return exec_cmd(dpath + " quota get -u " + user)
'''


def test_an_argument_vector_is_no_command_line_its_string_twin_stays():
    hits = _web(ARGV)
    assert ("command-injection", 9) not in hits
    assert ("command-injection", 13) not in hits
    assert ("command-injection", 17) in hits


COMMANDS = '''class ClusterCommands:
    def cluster(self, cluster_arg, *args, **kwargs):
        return self.execute_command(f"CLUSTER {cluster_arg.upper()}", *args, **kwargs)
'''

CLIENT = '''import socket


class Redis:
    def __init__(self, host):
        self.sock = socket.create_connection((host, 6379))

    def execute_command(self, *args, **options):
        self.sock.sendall(b" ".join(a.encode() for a in args) + b"\\r\\n")
        return self.sock.recv(65536)
'''

SHELL_CLIENT = '''import subprocess


class Runner:
    def execute_command(self, line, *args):
        return subprocess.run(line, shell=True, check=False)
'''

SSH = '''import paramiko


def list_dir(host, path):
    client = paramiko.SSHClient()
    client.connect(host)
    return client.exec_command(f"ls {path}")
'''


def _package(tmp_path, client: str, extra: dict[str, str] | None = None):
    pkg = tmp_path / "kv"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "commands.py").write_text(COMMANDS)
    (pkg / "client.py").write_text(client)
    for name, text in (extra or {}).items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_protocol_command_in_a_package_that_starts_no_process_is_noise(tmp_path):
    # a maintainer's script beside the package runs processes: it cannot be
    # imported from the package, so it proves nothing about it
    repo = _package(tmp_path, CLIENT, {"bench.py": "import subprocess\nsubprocess.run(['ls'])\n"})
    found = _hits(_filtered(repo), "kv/commands.py", _RULE, 3)
    assert found, "the command-injection finding is expected (then quieted)"
    for f in found:
        assert f.noise and "starts no process" in f.noise, f.noise
        assert f.severity.rank <= Severity.low.rank


def test_the_same_call_stays_where_the_package_runs_a_shell(tmp_path):
    repo = _package(tmp_path, SHELL_CLIENT)
    found = _hits(_filtered(repo), "kv/commands.py", _RULE, 3)
    assert found and all(f.noise is None for f in found), [f.noise for f in found]
    assert all(f.severity.at_least(Severity.medium) for f in found)


REMOTE = '''def purge(conn, key):
    return conn.run_command(f"rm -rf /srv/cache/{key}")
'''


def test_a_helper_the_package_does_not_define_stays(tmp_path):
    # conn's run_command is a dependency's: what it runs is not known
    repo = _package(tmp_path, CLIENT)
    (repo / "kv" / "remote.py").write_text(REMOTE)
    found = _hits(_filtered(repo), "kv/remote.py", _RULE, 2)
    assert found and all(f.noise is None for f in found), [f.noise for f in found]


def test_a_package_with_an_ssh_library_keeps_its_command_helpers(tmp_path):
    # paramiko's exec_command runs a remote shell, and the package defines
    # an exec_command of its own too: the import alone keeps it shown
    repo = _package(tmp_path, CLIENT + "\n\ndef exec_command(line):\n    return line\n")
    (repo / "kv" / "ssh.py").write_text(SSH)
    found = _hits(_filtered(repo), "kv/ssh.py", _RULE, 7)
    assert found and all(f.noise is None for f in found), [f.noise for f in found]


def test_a_linked_module_is_not_followed_and_proves_nothing(tmp_path):
    # a module the rule cannot read without following a link (here to a file
    # outside the project) may start a process: the finding stays shown
    outside = tmp_path / "outside.py"
    outside.write_text("X = 1\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    _package(repo, CLIENT)
    (repo / "kv" / "linked.py").symlink_to(outside)
    found = _hits(_filtered(repo), "kv/commands.py", _RULE, 3)
    assert found and all(f.noise is None for f in found), [f.noise for f in found]
