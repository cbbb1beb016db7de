"""eval/exec of code the module writes itself (a template engine, attrs'
generated methods) is code generation: noise. eval/exec of code from a
parameter, input(), argv, the environment, request data or a file stays
worth acting on. Real bandit on real files, both directions in each test."""

from __future__ import annotations

import pytest

from superqode_ls.models import Severity
from superqode_ls.qe.noise import FileLines, filter_findings
from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

pytestmark = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")

GENERATED = '''\
import os
import sys
from types import CodeType


class Template:
    def __init__(self, source):
        self.source = source

    @property
    def co(self):
        return compile(self.source, "<template>", "exec")

    def render(self, env):
        exec(self.co, env)


def make_init(names):
    lines = ["def __init__(self):"]
    for n in names:
        lines.append(f"    self.{n} = None")
    script = "\\n".join(lines)
    ns = {}
    exec(script, ns)
    return ns["__init__"]


def compile_and_eval(script, globs):
    bytecode = compile(script, "<generated>", "exec")
    eval(bytecode, globs)


def const():
    return eval("1 + 2")


def run_code(code: CodeType, ns):
    exec(code, ns)


def relocated(ns):
    code = compile("raise ValueError", "<t>", "exec")
    code = code.replace(co_name="template")
    exec(code, ns)


FIELDS = ("a", "b")


def accessors():
    return [eval(f"lambda obj: obj.{n}") for n in FIELDS]
'''

OUTSIDE = '''\
import os
import sys


def calc(expr):
    return eval(expr)


def from_argv():
    return eval(sys.argv[1])


def from_env():
    code = os.environ["HOOK"]
    exec(code)


def from_input():
    return eval(input("> "))


def from_file(path):
    with open(path) as fh:
        source = fh.read()
    exec(source)


def from_request(request):
    return eval(request.args["q"])


def dotted(target):
    module, name = target.split(":", 1)
    return eval("%s.%s" % (module, name))


def with_user_text(formula):
    return eval(f"lambda x: {formula}")


def lines_from_outside(extra):
    lines = ["x = 1"]
    lines.append(extra)
    exec("\\n".join(lines))
'''


def _findings(make_repo):
    repo = make_repo({"pkg/gen.py": GENERATED, "pkg/run.py": OUTSIDE})
    found = run_role(SecurityTester(), make_ctx(repo)).findings
    return filter_findings(found, read_line=FileLines(repo), threshold=0.7).findings


def _by_line(repo, rule):
    """The shown findings of ``rule`` (bandit's, after context), by line."""
    found = filter_findings(run_role(SecurityTester(), make_ctx(repo)).findings,
                            read_line=FileLines(repo), threshold=0.7).findings
    return {f.range.start_line: f for f in found if rule in (f.rule_id, *f.related_rules)}


def _runs(findings, file):
    return {f.range.start_line: f for f in findings
            if f.file == file and {"B307", "B102"} & {f.rule_id, *f.related_rules}}


def test_code_the_module_writes_is_noise_and_outside_code_stays(make_repo):
    found = _findings(make_repo)
    gen, run = _runs(found, "pkg/gen.py"), _runs(found, "pkg/run.py")
    # generated: a compile() property, joined template lines, a compile()
    # result, a literal, an f-string template filling in a name
    assert sorted(gen) == [15, 24, 30, 34, 38, 44, 51]
    for line, f in gen.items():
        assert f.noise and "code generation" in f.noise, line
        assert f.severity.rank <= Severity.low.rank
    # code objects: a parameter typed CodeType, code.replace() of compile()
    # from outside: parameter, argv, environment, input, file, request,
    # a dotted name from a parameter, a parameter inside a template, a
    # parameter appended to the lines
    assert sorted(run) == [6, 10, 15, 19, 25, 29, 34, 38, 44]
    for line, f in run.items():
        assert f.noise is None, (line, f.noise)
        assert f.severity.rank >= Severity.medium.rank


def test_all_interfaces_compared_is_noise_and_bound_stays(make_repo):
    repo = make_repo({"srv/net.py": (
        "import socket\n\n\n"
        "def describe(host):\n"
        "    if host == '0.0.0.0':\n"
        "        return 'all'\n"
        "    return 'any' if host in {'0.0.0.0', '::'} else host\n\n\n"
        "def serve():\n"
        "    s = socket.socket()\n"
        "    s.bind(('0.0.0.0', 8080))\n"
        "    return s\n"
    )})
    by_line = _by_line(repo, "B104")
    assert sorted(by_line) == [5, 7, 12]
    assert by_line[5].noise and "compared" in by_line[5].noise
    assert by_line[7].noise and "compared" in by_line[7].noise
    assert by_line[12].noise is None  # bound to every interface: stays


def test_secret_values_that_are_punctuation_or_markers_are_noise(make_repo):
    repo = make_repo({"lex/tokens.py": (
        "TOKEN_SPECIALS = r\"!#$%&'*+-.^_`|~\"\n\n\n"
        "def kind(token):\n"
        "    if token == '#bygroup':\n"
        "        return 1\n"
        "    return 0\n\n\n"
        "API_TOKEN = 'q8Zr3Lk0PwX2'\n"
    )})
    by_line = _by_line(repo, "B105")
    assert by_line[1].noise and "punctuation" in by_line[1].noise
    assert by_line[5].noise and "plain word" in by_line[5].noise
    assert by_line[10].noise is None and by_line[10].severity is Severity.high


def test_weak_hash_in_a_cache_key_function_is_noise_a_signature_stays(make_repo):
    repo = make_repo({"cache/keys.py": (
        "from hashlib import sha1\n\n\n"
        "def get_cache_key(name):\n"
        "    h = sha1(name.encode())\n"
        "    return h.hexdigest()\n\n\n"
        "def sign_token(secret, body):\n"
        "    h = sha1(secret + body)\n"
        "    return h.hexdigest()\n"
    )})
    by_line = _by_line(repo, "B324")
    assert by_line[5].noise and "cache key" in by_line[5].noise
    assert by_line[10].noise is None


def test_eval_of_a_forward_refs_code_object_is_noise_of_its_text_stays(make_repo):
    # typing.ForwardRef compiles the annotation into __forward_code__;
    # evaluating it is what get_type_hints does (pdoc's doc_types.py).
    repo = make_repo({"apidoc/types.py": (
        "def resolve(t, globalns, localns):\n"
        "    return eval(t.__forward_code__, globalns, localns)\n\n\n"
        "def resolve_text(t, globalns):\n"
        "    return eval(t.source, globalns)\n"
    )})
    found = _by_line(repo, "B307")
    assert found[2].noise and "code generation" in found[2].noise
    assert found[6].noise is None and found[6].severity.rank >= Severity.medium.rank
