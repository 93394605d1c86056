"""``https://`` (and ``http://``) files on a web server: the HTTP scheme of :mod:`tokenmill.files.remote`'s
interface, with the standard library's client (no dependency).

* **Identity.** One ``HEAD``: the size (``Content-Length``), the ``ETag`` and the ``Last-Modified``, recorded
  in the sidecar; any of them changed is a changed input for the plan and for ``verify``. A server that
  gives no size cannot be read in ranges and is refused.
* **Reads.** A ``GET`` with ``Range: bytes=START-END`` per stream or per Parquet read; the answer must be
  ``206``, or ``200`` to a range from byte 0 (a server that ignores ``Range``, such as ``python -m
  http.server``, sends the whole file from its start: the bytes asked for are read from it and the rest
  left unread), and carry the pinned ``ETag`` (or ``Last-Modified``, and for a ``200`` the size), and a
  strong ETag is also sent as ``If-Match``: a file replaced during a read stops it with one line. Redirects
  are followed, as urllib does (at most 10, at most 4 to one address); a loop ends in one line. The body is
  read as it arrives (``read1``), so that a server slower than
  :data:`~tokenmill.files.remote.MIN_BYTES_PER_SECOND` is cut, resumed, then refused.
* **No globs**: a web server has no listing; ``?`` starts the URL's query.
* **Credentials.** A URL's user info (``https://USER:PASSWORD@HOST/...``) is sent as HTTP basic
  authentication, to that host only (not to a host it redirects to), never as part of the address; a
  presigned URL's query is sent as given. Both are secrets: requests take the full URL
  (:func:`~tokenmill.files.urls.full_url`), every message its redacted name.
* **Failures**, each one line naming the URL: 404, 401/403, a server that does not answer
  (:data:`~tokenmill.files.remote.ATTEMPTS` attempts, 5xx answers retried likewise, 20 s per read) or answers
  too slowly, redirects in a loop, a server that ignores ``Range`` asked for a range past byte 0 (a Parquet
  read, a byte-range shard, or the resume of a whole-file stream dropped mid-body, which such a server cannot
  give).

Cost: one ``HEAD`` per input, one ``GET`` per range read; each request a new connection.
"""

from __future__ import annotations

import base64
import http.client
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from tokenmill.errors import TokenmillError
from tokenmill.files.remote import ATTEMPTS, READ_SECONDS, ObjectIdentity
from tokenmill.files.urls import full_url, redact, user_info

__all__ = ["PREFIXES", "identity", "expand", "open_range"]

PREFIXES = ("https://", "http://")
_USER_AGENT = "tokenmill"


def _host(url: str) -> str:
    """The URL's host and port, never a user part (which could hold a secret)."""
    return urlsplit(url).netloc.rpartition("@")[2]


def _prepared(url: str, method: str, headers: dict[str, str]) -> urllib.request.Request:
    """The request for the full URL of ``url`` (a name, :func:`~tokenmill.files.urls.full_url`): its user
    info, where it has one, as basic authentication for this host only."""
    address, credentials = user_info(full_url(url))
    request = urllib.request.Request(address, method=method, headers={"User-Agent": _USER_AGENT, **headers})
    if credentials is not None:
        token = base64.b64encode(":".join(credentials).encode()).decode("ascii")
        request.add_unredirected_header("Authorization", f"Basic {token}")
    return request


def _request(url: str, method: str, headers: dict[str, str], doing: str) -> http.client.HTTPResponse:
    """The server's answer to one request, retried on no answer or a 5xx.

    Raises:
        TokenmillError: 404, 401/403, 412, 416, another error status, or no answer after the attempts.
    """
    request = _prepared(url, method, headers)
    url = redact(url)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return urllib.request.urlopen(request, timeout=READ_SECONDS)
        except urllib.error.HTTPError as exc:
            exc.close()
            if str(exc.reason).startswith(urllib.request.HTTPRedirectHandler.inf_msg):
                raise TokenmillError(f"{url}: the server's redirects go round in a loop (HTTP {exc.code}; given up "
                                     f"after {urllib.request.HTTPRedirectHandler.max_redirections} redirects or "
                                     f"{urllib.request.HTTPRedirectHandler.max_repeats} to one address) while "
                                     f"{doing}") from None
            if exc.code == 404 or exc.code == 410:
                raise TokenmillError(f"{url}: no such file (HTTP {exc.code})") from None
            if exc.code in (401, 403):
                raise TokenmillError(f"{url}: permission denied (HTTP {exc.code}) while {doing}") from None
            if exc.code == 412:
                raise TokenmillError(f"{url}: the file changed during the read (its ETag is no longer the one first "
                                     f"seen); nothing was written, run again to read the new version") from None
            if exc.code == 416:
                raise TokenmillError(f"{url}: the file is shorter than when it was first seen (changed?)") from None
            if exc.code < 500 or attempt == ATTEMPTS:
                raise TokenmillError(f"{url}: HTTP {exc.code} {exc.reason} while {doing}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            if attempt == ATTEMPTS:
                reason = getattr(exc, "reason", exc)
                raise TokenmillError(f"{url}: the server {_host(url)} does not answer ({ATTEMPTS} attempts: "
                                     f"{type(reason).__name__}) while {doing}") from None
        time.sleep(0.2 * attempt)
    raise AssertionError("unreachable")


def identity(url: str) -> ObjectIdentity:
    """The file's identity now (one ``HEAD``): size, ``ETag``, ``Last-Modified``.

    Raises:
        TokenmillError: no such file, no permission, no answer, no size.
    """
    with _request(url, "HEAD", {"Accept-Encoding": "identity"}, "reading its metadata") as response:
        headers = response.headers
    length = headers.get("Content-Length")
    if length is None or not length.isdigit():
        raise TokenmillError(f"{url}: the server gives no size (Content-Length) for it, so it cannot be read in "
                             f"ranges; download it and give the local file")
    return ObjectIdentity(url, int(length), headers.get("ETag") or "", last_modified=headers.get("Last-Modified"))


def expand(url: str) -> list[str]:
    """``[url]``: a web server has no listing, so an ``https://`` URL names one file."""
    return [url]


class _Body:
    """A ``GET``'s body, its first ``limit`` bytes only (``b""`` after them: a ``200`` answer is the whole file,
    of which a range from byte 0 wants a head), its dropped connections raised as ``ConnectionError``."""

    def __init__(self, response: http.client.HTTPResponse, limit: int):
        self._response = response
        self._left = limit

    def read(self, size: int) -> bytes:
        return self._take(self._response.read, size)

    def read1(self, size: int) -> bytes:
        """At most ``size`` bytes, those that have arrived (one read of the socket): what lets
        :class:`~tokenmill.files.remote.ObjectStream` measure the rate as the bytes come."""
        return self._take(self._response.read1, size)

    def _take(self, read, size: int) -> bytes:
        if self._left <= 0:
            return b""
        try:
            data = read(min(size, self._left))
        except (OSError, http.client.HTTPException) as exc:
            raise ConnectionError(str(exc)) from None
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._response.close()


def open_range(identity: ObjectIdentity, start: int, end: int) -> _Body:
    """One ``GET`` of bytes ``[start, end)`` of the version ``identity``.

    Raises:
        TokenmillError: the file changed, is gone or is shorter; no permission; no answer; ranges ignored.
    """
    url = identity.url
    headers = {"Range": f"bytes={start}-{end - 1}", "Accept-Encoding": "identity"}
    if identity.etag and not identity.etag.startswith("W/"):  # a weak ETag never matches If-Match
        headers["If-Match"] = identity.etag
    elif identity.last_modified:
        headers["If-Unmodified-Since"] = identity.last_modified
    response = _request(url, "GET", headers, f"reading from byte {start}")
    got = response.headers
    changed = any(pinned and got.get(header) and got.get(header) != pinned
                  for header, pinned in (("ETag", identity.etag), ("Last-Modified", identity.last_modified)))
    total = got.get("Content-Range", "").rpartition("/")[2]
    if response.status == 206 and total.isdigit() and int(total) != identity.size:
        changed = True
    length = got.get("Content-Length", "")
    if response.status == 200 and length.isdigit() and int(length) != identity.size:
        changed = True  # a 200 is the whole file: its length is the file's size
    if changed:
        response.close()
        raise TokenmillError(f"{url}: the file changed during the read (its ETag, Last-Modified or size is no longer "
                             f"the one first seen); nothing was written, run again to read the new version")
    if response.status != 206 and start != 0:  # the whole file from byte 0: what is wanted cannot be read
        response.close()
        raise TokenmillError(f"{url}: the server ignores range requests (HTTP {response.status} to a Range from byte "
                             f"{start}), so it cannot be read in parts (Parquet, a byte-range shard) nor resume a "
                             f"dropped read; download it and give the local file")
    return _Body(response, end - start)
