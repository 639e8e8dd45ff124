"""AWS Signature Version 4 for the client's requests (standard library only).

The server verifies what AWS verifies (docs/api.md, "Authentication"); the
canonical request here is built as the server rebuilds it: the path as sent,
URI-encoded once more (as for every AWS service but S3), the query decoded and
re-encoded, sorted.
"""

import datetime
import hashlib
import hmac
import os
import urllib.parse

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "monitoring"
_UNRESERVED = "-_.~"


class Credentials:
    """An access key, its secret and an optional session token."""

    __slots__ = ("access_key_id", "secret_access_key", "session_token")

    def __init__(self, access_key_id, secret_access_key, session_token=None):
        self.access_key_id = access_key_id
        self.secret_access_key = secret_access_key
        self.session_token = session_token or None

    @classmethod
    def from_environment(cls, environ=None):
        """The credentials of AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
        (+ AWS_SESSION_TOKEN), or None when either of the first two is unset."""
        env = os.environ if environ is None else environ
        key = env.get("AWS_ACCESS_KEY_ID")
        secret = env.get("AWS_SECRET_ACCESS_KEY")
        if not key or not secret:
            return None
        return cls(key, secret, env.get("AWS_SESSION_TOKEN"))


def region_from_environment(environ=None):
    env = os.environ if environ is None else environ
    return env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"


def _sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def _hmac(key, text):
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def _canonical_uri(path):
    segments = []
    for segment in (path or "/").split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    normalized = "/".join(segments) or "/"
    if not normalized.startswith("/"):
        normalized = "/" + normalized
    return urllib.parse.quote(normalized, safe="/" + _UNRESERVED)


def _canonical_query(query):
    pairs = []
    for item in query.split("&"):
        if not item:
            continue
        key, _, value = item.partition("=")
        pairs.append((urllib.parse.quote(urllib.parse.unquote(key), safe=_UNRESERVED),
                      urllib.parse.quote(urllib.parse.unquote(value), safe=_UNRESERVED)))
    return "&".join(k + "=" + v for k, v in sorted(pairs))


def signing_key(secret, date, region, service):
    key = _hmac(("AWS4" + secret).encode("utf-8"), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def sign(method, path_and_query, headers, body, credentials, region, service=SERVICE, now=None):
    """Returns the headers to add to a request: X-Amz-Date, X-Amz-Security-Token
    (with a session token) and Authorization.

    `headers` maps names to values and must hold Host; every header given is
    signed. `body` is bytes as sent. `now` is a UTC datetime (default: now)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = amz_date[:8]
    added = {"X-Amz-Date": amz_date}
    if credentials.session_token:
        added["X-Amz-Security-Token"] = credentials.session_token
    all_headers = {name.lower(): " ".join(str(value).split()) for name, value in headers.items()}
    all_headers.update({name.lower(): value for name, value in added.items()})
    names = sorted(all_headers)
    signed_headers = ";".join(names)
    path, _, query = path_and_query.partition("?")
    canonical_request = "\n".join([
        method,
        _canonical_uri(path),
        _canonical_query(query),
        "".join(name + ":" + all_headers[name] + "\n" for name in names),
        signed_headers,
        _sha256_hex(body or b""),
    ])
    scope = "/".join([date, region, service, "aws4_request"])
    string_to_sign = "\n".join(
        [ALGORITHM, amz_date, scope, _sha256_hex(canonical_request.encode("utf-8"))])
    signature = hmac.new(signing_key(credentials.secret_access_key, date, region, service),
                         string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    added["Authorization"] = "%s Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        ALGORITHM, credentials.access_key_id, scope, signed_headers, signature)
    return added
