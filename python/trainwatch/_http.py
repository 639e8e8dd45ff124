"""One kept-open HTTP connection to an endpoint, SigV4-signed when it has
credentials. Not thread-safe: each user (the sender thread, a Trial) has its own."""

import http.client
import json
import urllib.parse

from . import _sigv4


class HttpError(Exception):
    """An answer other than 2xx: `status` and the server's message."""

    def __init__(self, status, message):
        super().__init__("HTTP %d: %s" % (status, message))
        self.status = status
        self.message = message


def error_message(body):
    """The message of a docs/api.md error body, or the body's start."""
    try:
        error = json.loads(body.decode("utf-8"))["error"]
        return "%s: %s" % (error.get("code", "Error"), error.get("message", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        return body[:300].decode("utf-8", "replace")


class Connection:
    def __init__(self, url, credentials=None, region=None, timeout=10.0):
        parts = urllib.parse.urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._netloc = parts.netloc
        self._prefix = parts.path.rstrip("/")
        self._credentials = credentials
        self._region = region
        self.timeout = timeout
        self._conn = None

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method, path, query=None, body=None, content_type=None):
        """(status, body bytes). Raises OSError / http.client.HTTPException when
        the endpoint cannot be reached or the connection breaks."""
        target = self._prefix + path
        if query:
            target += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
        headers = {"Host": self._netloc}
        if content_type:
            headers["Content-Type"] = content_type
        if self._credentials is not None:
            headers.update(_sigv4.sign(method, target, headers, body or b"", self._credentials,
                                       self._region))
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self.timeout)
        try:
            self._conn.request(method, target, body=body, headers=headers)
            response = self._conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, data

    def get_json(self, path, query=None):
        status, data = self.request("GET", path, query=query)
        if status != 200:
            raise HttpError(status, error_message(data))
        return json.loads(data.decode("utf-8"))
