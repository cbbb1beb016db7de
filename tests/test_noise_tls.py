"""TLS hostname checks turned off in the branch a setting chooses, beside a
branch that turns them on (scrapy's DOWNLOAD_VERIFY_CERTIFICATES): noise;
turned off with no branch that turns them on stays shown; a function that
matches the hostname itself, or a context class's attribute default, is noise
(urllib3). Real security role output on real files."""

from __future__ import annotations

from tests.test_noise_idioms import _noise
from tests.test_noise_project import _kept, _security

TLS = """import ssl


def context(settings):
    verify = settings.getbool("VERIFY")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if verify:
        ctx.check_hostname = True
        ctx.verify_mode = ssl.CERT_REQUIRED
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def always():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    return ctx


def logged(debug):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if debug:
        print("debug")
    else:
        ctx.check_hostname = False
    return ctx
"""


def test_hostname_checks_off_only_where_a_setting_says_are_noise_others_stay(make_repo):
    found = _security(make_repo({"lib/tls.py": TLS}))
    _noise(found, "lib/tls.py", 11, "tls-no-hostname-check", "the other branch turns them on")
    _kept(found, "lib/tls.py", 18, "tls-no-hostname-check")  # always off
    _kept(found, "lib/tls.py", 27, "tls-no-hostname-check")  # no branch turns them on


OWN_MATCH = """import ssl

from .match import match_hostname


def connect(sock, host, fingerprint):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if fingerprint:
        ctx.check_hostname = False
    conn = ctx.wrap_socket(sock)
    match_hostname(conn.getpeercert(), host)
    return conn


def insecure():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    return ctx
"""

SHIM = """class WrappedContext:
    def __init__(self, protocol):
        self.protocol = protocol
        self.check_hostname = False

    def wrap_socket(self, sock):
        return sock


class Client:
    def __init__(self):
        self.check_hostname = False
"""


def test_a_module_that_matches_the_hostname_itself_or_a_context_classs_default_is_noise(make_repo):
    """urllib3: ssl's check off where urllib3 matches the names itself; its
    PyOpenSSLContext's attribute default. A client class that turns the
    check off for good stays."""
    found = _security(make_repo({"lib/conn.py": OWN_MATCH, "lib/shim.py": SHIM,
                                 "lib/tls.py": TLS}))
    _noise(found, "lib/conn.py", 9, "tls-no-hostname-check", "matches the certificate's names")
    _kept(found, "lib/conn.py", 17, "tls-no-hostname-check")  # the match is another function's
    _noise(found, "lib/shim.py", 4, "tls-no-hostname-check", "a context class like ssl.SSLContext")
    _kept(found, "lib/shim.py", 12, "tls-no-hostname-check")
    _kept(found, "lib/tls.py", 18, "tls-no-hostname-check")  # no match of its own there


# redis-py's HTTP client: the verifying branch makes ssl's default context
# (CERT_REQUIRED, check_hostname on) and turns nothing off; the other branch
# is entered only where the caller passed verify_tls=False.
DEFAULT_CONTEXT = """import ssl


class HttpClient:
    def __init__(self, base_url, verify_tls=True, ca_file=None):
        self.base_url = base_url
        self.verify_tls = verify_tls
        self.ca_file = ca_file

    def context(self):
        if self.verify_tls:
            context = ssl.create_default_context(cafile=self.ca_file)
        else:
            # Verification disabled
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def both_off(self):
        if self.verify_tls:
            context = ssl.create_default_context()
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context()
            context.check_hostname = False
        return context
"""


def test_a_default_context_in_the_other_branch_is_a_verifying_branch(make_repo):
    found = _security(make_repo({"lib/http.py": DEFAULT_CONTEXT}))
    _noise(found, "lib/http.py", 16, "tls-no-hostname-check", "the other branch turns them on")
    # a default context whose checks that branch turns off verifies nothing
    _kept(found, "lib/http.py", 26, "tls-no-hostname-check")
