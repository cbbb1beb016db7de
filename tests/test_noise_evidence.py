"""A weak hash and a mutable default are shown only on evidence that they
matter (qe/noise_evidence.py): a secret or a signature in sight of the
hash, a default the function changes or lets outlive the call. Without it
they are noise, said why, never dropped. Real bandit and ruff on real
files, through the whole filter."""

from __future__ import annotations

from superqode_ls.models import Severity
from superqode_ls.qe.roles.lint import LintTester
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _filtered, _kept, _noise, needs_bandit, needs_ruff

HASHES = '''import hashlib
import hmac
import os
from hashlib import md5, sha1


class Record:
    def __init__(self, tree):
        self.id = hashlib.md5(tree.encode("utf-8")).hexdigest()


def describe(path):
    rv = {}
    rv["_gid"] = hashlib.md5(path.encode("utf-8")).hexdigest()
    return rv


def failure_path(folder, artifact_name):
    return os.path.join(folder, hashlib.md5(artifact_name.encode("utf-8")).hexdigest())


def check(password):
    return md5(password).hexdigest()


def mix(secret, salt):
    return sha1(secret + salt).hexdigest()


def verify(request, body):
    if hashlib.md5(body).hexdigest() != request.headers["X-Digest"]:
        raise ValueError("bad digest")


def stamp(user):
    h = hashlib.sha1()
    h.update(user.api_token.encode())
    return h.hexdigest()


def _legacy(data=b""):
    return hashlib.md5(data)


def sign(key, msg):
    return hmac.new(key, msg, _legacy).hexdigest()


def chosen(data):
    return hashlib.md5(data, usedforsecurity=True).hexdigest()


def iter_artifacts(paths):
    for path in paths:
        h = hashlib.sha1()
        with open(path, "rb") as f:
            h.update(f.read())
        yield path, h.hexdigest()


def publish(target, credentials=None):
    for path, checksum in iter_artifacts(target):
        print(path, checksum, credentials)


def send_activation(user, mailer):
    code = hashlib.md5(user.email.encode()).hexdigest()
    mailer.send(user.email, code)


def fetch_body(url, request_headers):
    import requests
    session = requests.Session()
    r = session.request("GET", url, headers=request_headers, timeout=10)
    return hashlib.md5(r.content).hexdigest()


def compute(form):
    pw = form.get("password")
    return hashlib.md5(pw.encode()).hexdigest()
'''


@needs_bandit
def test_a_weak_hash_is_shown_only_with_a_secret_or_signature_in_sight(make_repo):
    repo = make_repo({"app/ids.py": HASHES})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    why = "no secret or signature in sight"
    _noise(found, "app/ids.py", 9, "B324", why)  # lektor's project id
    _noise(found, "app/ids.py", 14, "B324", why)  # lektor's _gid of a path
    _noise(found, "app/ids.py", 19, "B324", why)  # a file named after an artifact
    _kept(found, "app/ids.py", 23, "B324")  # md5(password)
    _kept(found, "app/ids.py", 27, "B324")  # sha1(secret + salt)
    _kept(found, "app/ids.py", 31, "B324")  # checked against what the request sent
    _kept(found, "app/ids.py", 36, "B324")  # fed a token through update()
    _kept(found, "app/ids.py", 42, "B324")  # an HMAC's digest, through its caller
    _kept(found, "app/ids.py", 50, "B324")  # the author says it is for security
    # the caller's credentials are not what the digest protects (lektor's publisher)
    _noise(found, "app/ids.py", 55, "B324", why)
    _kept(found, "app/ids.py", 67, "B324")  # a code mailed to the user is a token
    # a downloaded body's checksum: the HTTP client's session is no user's session
    _noise(found, "app/ids.py", 75, "B324", why)
    _kept(found, "app/ids.py", 80, "B324")  # a mapping's get of the password stays


LINT_CONFIG = '[tool.ruff.lint]\nselect = ["B006"]\n'

DEFAULTS = '''import json

REGISTRY = {}


def remember(x, seen=[]):
    seen.append(x)
    return len(seen)


def render(template, opts={}):
    return template.render(json.dumps(opts), strict=opts)


def walk(node, context={"seen": []}):
    print(node, context["seen"], len(context))


class Holder:
    def __init__(self, items=[]):
        self.items = items


def register(name, hooks={}):
    REGISTRY[name] = hooks


def grow(x, acc=[]):
    acc += [x]


def fill(x, cache={}):
    _store(cache, x)


def _store(table, key):
    table[key] = 1


def aliased(x, bag=set()):
    current = bag
    current.add(x)


def nested(x, calls=[]):
    def inner():
        calls.append(x)
    return inner


class Base:
    def __init__(self, options):
        self.options = options


class Child(Base):
    def __init__(self, options={}):
        super().__init__(options)


def count(x, opts={"seen": []}):
    return _size(opts)


def _size(d):
    return len(d)
'''


@needs_ruff
def test_a_mutable_default_is_shown_only_where_the_function_changes_or_keeps_it(make_repo):
    repo = make_repo({"pyproject.toml": LINT_CONFIG, "lib/defaults.py": DEFAULTS})
    found = _filtered(repo, run_role(LintTester(), make_ctx(repo)).findings)
    why = "never changes"
    _noise(found, "lib/defaults.py", 11, "B006", why)  # passed to calls, read
    _noise(found, "lib/defaults.py", 15, "B006", why)  # not flat, only read
    _kept(found, "lib/defaults.py", 6, "B006", Severity.low)  # appended to
    _kept(found, "lib/defaults.py", 20, "B006", Severity.low)  # kept on self
    _kept(found, "lib/defaults.py", 24, "B006", Severity.low)  # kept in a global dict
    _kept(found, "lib/defaults.py", 28, "B006", Severity.low)  # += grows it
    _kept(found, "lib/defaults.py", 32, "B006", Severity.low)  # a helper of the module sets it
    _kept(found, "lib/defaults.py", 40, "B006", Severity.low)  # changed through an alias
    _kept(found, "lib/defaults.py", 45, "B006", Severity.low)  # changed in a nested function
    _kept(found, "lib/defaults.py", 57, "B006", Severity.low)  # kept by the base class
    _noise(found, "lib/defaults.py", 61, "B006", why)  # a helper of the module only reads it
