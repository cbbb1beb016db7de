"""TLS hostname checks turned off in the branch a setting chooses, beside a
branch that turns them on (scrapy's DOWNLOAD_VERIFY_CERTIFICATES): noise;
turned off with no branch that turns them on stays shown. Real security
role output on real files."""

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
