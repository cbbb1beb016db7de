"""A weak hash a protocol fixes, of public data, is noise: SHA-1 of a
public key (redis-py's OCSP responder key hash, RFC 6960). Its twins stay: SHA-1 of a private key's bytes, of
a password, of the public key joined with a secret, and of a value the rule
cannot follow (qe/noise_digest.py). Real files, real bandit, the whole
noise filter."""

from __future__ import annotations

from tests.test_noise_idioms import _noise, needs_bandit
from tests.test_noise_project import _kept, _security

KEYS = '''import hashlib

from cryptography.hazmat.backends import default_backend
from cryptography.hazmat.primitives.hashes import SHA1, Hash
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def responder_matches(certificate, responder_hash):
    pubkey = certificate.public_key()
    h = pubkey.public_bytes(Encoding.DER, PublicFormat.PKCS1)
    sha1 = Hash(SHA1(), backend=default_backend())
    sha1.update(h)
    return sha1.finalize() == responder_hash


def key_signature(key):
    raw = key.private_bytes(Encoding.DER, None, None)
    return hashlib.sha1(raw).hexdigest()


def password_check(certificate, password, stored):
    h = certificate.public_key().public_bytes(Encoding.DER, PublicFormat.PKCS1)
    sha1 = Hash(SHA1(), backend=default_backend())
    sha1.update(h)
    sha1.update(password.encode())
    return sha1.finalize() == stored


def cert_token(cert_blob, user_password):
    return hashlib.sha1(cert_blob + user_password).hexdigest()
'''


@needs_bandit
def test_a_protocols_digest_of_public_data_is_noise_a_secrets_stays(make_repo):
    found = _security(make_repo({"tls/ocsp.py": KEYS}))
    _noise(found, "tls/ocsp.py", 11, "B303", "a digest a protocol fixes")
    _kept(found, "tls/ocsp.py", 18, "B324")  # a private key's bytes
    _kept(found, "tls/ocsp.py", 23, "B303")  # a password fed in too
    _kept(found, "tls/ocsp.py", 30, "B324")  # a password joined in
