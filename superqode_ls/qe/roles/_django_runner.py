"""Django test runner the unit_tester passes to ``manage.py test --testrunner``.

It is copied to a private directory (never into the sandbox) and imported by
the project's interpreter, so it needs only Django and the standard library.
It is the project's own runner (``TEST_RUNNER``, else Django's
DiscoverRunner: the project's settings, its test database, its
discovery), with a result class that appends each failure to
``$SUPERQODE_PYTEST_REPORT`` as one JSON line, in the records the pytest
recorder writes (``_pytest_plugin.py``), so one parser reads both. A module
that cannot be imported is a "collect" record; an error before any test ran
(the test database, the system checks) is a "setup" record.
"""

import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import unittest

from django.conf import settings
from django.test.runner import DiscoverRunner
from django.test.utils import get_runner

try:  # copied beside this module in the run's private folder (unit.py)
    from superqode_failure_chain import chain as _chain
except ImportError:  # imported from the package itself
    from superqode_ls.qe.roles._failure_chain import chain as _chain

# The project's own runner (settings.TEST_RUNNER: healthchecks' sets up its
# mail backends there), which SuperQode's builds on; Django's by default.
# Imported by ``manage.py test``, so the settings are configured by now.
try:
    _BASE = get_runner(settings)
except Exception:  # noqa: BLE001 - a runner that does not import: Django's own
    _BASE = DiscoverRunner
if not (isinstance(_BASE, type) and issubclass(_BASE, DiscoverRunner)):
    _BASE = DiscoverRunner

_OUT = os.environ.get("SUPERQODE_PYTEST_REPORT")
_COUNTS = {"passed": 0, "skipped": 0, "failed": 0, "collect": 0}
# unittest's placeholder for setUpClass/module errors: "setUpClass (pkg.mod.Class)".
_HOLDER = re.compile(r"^(\w+) \(([\w.]+)\)")


def _write(record):
    if not _OUT:
        return
    record.setdefault("runner", "django")
    with open(_OUT, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
        fh.flush()


def _module_path(name):
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None)
    if not path:
        return name.replace(".", "/") + ".py"
    try:
        return os.path.relpath(path, os.getcwd()).replace(os.sep, "/")
    except ValueError:
        return path


def _entries(tb):
    try:
        return [{"path": f.filename, "lineno": f.lineno, "name": f.name}
                for f in traceback.extract_tb(tb)]
    except Exception:  # noqa: BLE001 - a broken traceback must not break the run
        return []


def _text(err):
    etype, value, tb = err
    return "".join(traceback.format_exception(etype, value, tb))


def _import_error(exc):
    """A module that did not import: the error first, then where in the
    project (unittest's loader keeps the whole traceback in the message)."""
    lines = str(exc).splitlines()
    last = next((line for line in reversed(lines) if line.strip()), "")
    frames = [line.strip() for line in lines if line.lstrip().startswith('File "')]
    here = os.getcwd() + os.sep
    own = [line for line in frames if here in line and "site-packages" not in line]
    return "\n".join([last, *(own or frames)[-6:]])


def _where(test):
    """(kind, nodeid, line, when) of a test or of unittest's error holder."""
    cls = type(test)
    method = getattr(test, "_testMethodName", None)
    if cls.__name__ == "_FailedTest":  # the module (or package) did not import
        return "collect", _module_path(method or ""), 1, "collect"
    if method is None:  # setUpClass / setUpModule failed: no test of it ran
        m = _HOLDER.match(str(getattr(test, "description", test)))
        if not m:
            return "test", str(test), 1, "setup"
        dotted = m.group(2)
        mod, _, name = dotted.rpartition(".")
        if mod in sys.modules:
            return "test", f"{_module_path(mod)}::{name}", 1, "setup"
        return "test", _module_path(dotted), 1, "setup"
    func = getattr(cls, method, None)
    code = getattr(func, "__code__", None)
    line = code.co_firstlineno if code is not None else 1
    return "test", f"{_module_path(cls.__module__)}::{cls.__qualname__}::{method}", line, "call"


class _Result(unittest.TextTestResult):
    def startTest(self, test):
        self._t0 = time.perf_counter()
        super().startTest(test)

    def _record(self, test, err, suffix=""):
        kind, nodeid, line, when = _where(test)
        _COUNTS["collect" if kind == "collect" else "failed"] += 1
        text = _text(err) if err[0] is not None else str(err[1])
        exc = err[0].__name__ if err[0] is not None else None
        message = "".join(traceback.format_exception_only(err[0], err[1])) if exc else text
        _write({
            "kind": kind,
            "nodeid": nodeid + suffix,
            "when": when,
            "test_line": line,
            "exc_type": exc,
            "message": (_import_error(err[1]) if kind == "collect" else message)[-4000:],
            "entries": [] if kind == "collect" else _entries(err[2]),
            "chain": [] if kind == "collect" or err[0] is None else _chain(err[1]),
            "longrepr": text[-6000:],
            "duration": time.perf_counter() - getattr(self, "_t0", time.perf_counter()),
        })

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, err)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(test, err, f" [{subtest._subDescription()}]")

    def addSuccess(self, test):
        super().addSuccess(test)
        _COUNTS["passed"] += 1

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        _COUNTS["skipped"] += 1

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        try:
            raise AssertionError("unexpected success: the test is marked expectedFailure")
        except AssertionError:
            self._record(test, sys.exc_info())


def _manifest_storage():
    """Whether the static files storage needs collectstatic's manifest, and
    it is not there (the developer's README says to run collectstatic first)."""
    from django.conf import settings
    from django.contrib.staticfiles.storage import ManifestFilesMixin
    from django.utils.module_loading import import_string

    if "django.contrib.staticfiles" not in settings.INSTALLED_APPS:
        return False
    storages = getattr(settings, "STORAGES", None) or {}
    backend = (storages.get("staticfiles") or {}).get("BACKEND") or getattr(
        settings, "STATICFILES_STORAGE", None)
    if not backend:
        return False
    cls = import_string(backend)
    if not (isinstance(cls, type) and issubclass(cls, ManifestFilesMixin)):
        return False
    root = settings.STATIC_ROOT
    return not (root and os.path.isfile(os.path.join(root, cls.manifest_name)))


class Runner(_BASE):
    _static = None

    def get_resultclass(self):
        return _Result

    def setup_test_environment(self, **kwargs):
        super().setup_test_environment(**kwargs)
        try:
            needed = _manifest_storage()
        except Exception:  # noqa: BLE001 - the tests will say what is wrong
            needed = False
        if needed:
            # collectstatic, as the developer runs it before the tests, into
            # a private folder: never into the sandbox.
            from django.core.management import call_command
            from django.test.utils import override_settings

            self._static = tempfile.mkdtemp(prefix="superqode-static-")
            override_settings(STATIC_ROOT=self._static).enable()
            call_command("collectstatic", interactive=False, verbosity=0)

    def teardown_test_environment(self, **kwargs):
        super().teardown_test_environment(**kwargs)
        if self._static:
            shutil.rmtree(self._static, ignore_errors=True)

    def build_suite(self, *args, **kwargs):
        suite = super().build_suite(*args, **kwargs)
        self._collected = sum(1 for t in _flat(suite) if type(t).__name__ != "_FailedTest")
        return suite

    def run_tests(self, *args, **kwargs):
        try:
            failures = super().run_tests(*args, **kwargs)
        except BaseException as e:  # the test database, the system checks...
            _write({"kind": "setup", "runner": "django", "exc_type": type(e).__name__,
                    "message": "".join(traceback.format_exception_only(type(e), e))[-4000:],
                    "longrepr": traceback.format_exc()[-6000:]})
            raise
        collected = getattr(self, "_collected", 0)
        bad = _COUNTS["failed"] + _COUNTS["collect"]
        _write({"kind": "summary", "exitstatus": 5 if not collected and not bad else int(bad > 0),
                "collected": collected, "failed": bad, "passed": _COUNTS["passed"],
                "skipped": _COUNTS["skipped"], "randomly": False,
                "collect_errors": _COUNTS["collect"]})
        return failures


def _flat(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flat(t)
        else:
            yield t
