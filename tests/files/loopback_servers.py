"""Loopback HTTP servers for tests/files/test_https.py and test_hf.py: standard-library ``http.server`` in a
thread, bound to 127.0.0.1 on a free port, stopped by the context manager. Nothing leaves the machine.

* :class:`RangeServer` serves files from a dict, as a static web server does: ``HEAD`` and ``GET`` with
  ``Content-Length``, a strong ``ETag`` (md5 of the bytes), ``Last-Modified``, single ``Range: bytes=A-B``
  answered ``206`` with ``Content-Range``, ``If-Match`` answered ``412``, 404 for a missing file; or, with
  ``ranges=False``, as ``python -m http.server`` does: ``Range`` and ``If-Match`` ignored, every ``GET``
  answered ``200`` with the whole file. Every request's method, path and headers are kept in ``requests``.
  With ``credentials=(USER, PASSWORD)`` it answers ``401`` to a request without that HTTP basic
  authentication; with ``query=...``, ``403`` to one whose query is not that one (a presigned URL's).
* Either answers a path in its ``redirects`` with a ``302`` to the path it names (two that name each other:
  a redirect loop).
* :class:`FakeHub` stands in for the Hugging Face Hub (``huggingface.co``) as ``huggingface_hub`` calls it
  to read a dataset, and for nothing else: ``GET /api/datasets/ORG/NAME/revision/REV`` (HfApi.dataset_info:
  the revision's commit sha), ``GET /api/datasets/ORG/NAME/tree/SHA[/PATH]?recursive=`` (list_repo_tree),
  ``POST /api/datasets/ORG/NAME/paths-info/SHA`` (get_paths_info), and
  ``GET /datasets/ORG/NAME/resolve/SHA/PATH`` with ``Range`` (a file's bytes; LFS files, Parquet here,
  answered as the Hub does with a redirect to its storage, ``/lfs/SHA256``). Unknown datasets and
  revisions are answered 404 with the Hub's ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``);
  a private dataset answers 401 without ``Authorization: Bearer TOKEN``. A dataset is commits of
  ``{path: bytes}``, and branches naming them; moving a branch is one assignment.
"""

from __future__ import annotations

import base64
import contextlib
import email.message
import email.utils
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self.server.owner.respond(self, head=True)

    def do_GET(self) -> None:
        self.server.owner.respond(self, head=False)

    def do_POST(self) -> None:
        self.server.owner.respond(self, head=False)


class RangeServer:
    """A static file server with Range, ETag and If-Match support (see the module's docstring)."""

    def __init__(self, files: dict[str, bytes] | None = None, ranges: bool = True,
                 credentials: tuple[str, str] | None = None, query: str | None = None):
        self.files = dict(files or {})
        self.ranges = ranges
        self.authorization = None if credentials is None else \
            "Basic " + base64.b64encode(":".join(credentials).encode()).decode()
        self.query = query
        self.redirects: dict[str, str] = {}  # path → the path it is redirected to
        self.requests: list[tuple[str, str, email.message.Message]] = []
        self.modified = "Wed, 21 Oct 2026 07:28:00 GMT"
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RangeServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def respond(self, handler: BaseHTTPRequestHandler, head: bool) -> None:
        """Keep the request, then answer it: a redirect where ``redirects`` names its path."""
        self.requests.append((handler.command, handler.path, handler.headers))  # (headers: case-blind get)
        path = urlsplit(handler.path).path
        if path in self.redirects:
            return self.reply(handler, 302, b"", head, {"Location": f"{self.url}{self.redirects[path]}"})
        return self.answer(handler, head)

    @staticmethod
    def reply(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", head: bool = False,
              headers: dict[str, str] | None = None) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head:
            handler.wfile.write(body)

    def serve_bytes(self, handler: BaseHTTPRequestHandler, data: bytes, head: bool, etag: str,
                    modified: str | None) -> None:
        """``data`` as a static server answers a HEAD or a (ranged, conditional) GET of it."""
        headers = {"ETag": etag, "Accept-Ranges": "bytes" if self.ranges else "none"}
        if modified:
            headers["Last-Modified"] = modified
        wanted = handler.headers.get("If-Match")
        if wanted is not None and wanted != etag and self.ranges:
            return self.reply(handler, 412, head=head, headers=headers)
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", handler.headers.get("Range", ""))
        if ranged is None or not self.ranges or head:
            return self.reply(handler, 200, data, head, headers)
        start = int(ranged[1])
        end = min(int(ranged[2]) + 1 if ranged[2] else len(data), len(data))
        if start >= len(data):
            return self.reply(handler, 416, head=head, headers={"Content-Range": f"bytes */{len(data)}"})
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
        return self.reply(handler, 206, data[start:end], head, headers)

    def answer(self, handler: BaseHTTPRequestHandler, head: bool) -> None:
        path, query = urlsplit(handler.path).path, urlsplit(handler.path).query
        if self.authorization is not None and handler.headers.get("Authorization") != self.authorization:
            return self.reply(handler, 401, b"who are you", head, {"WWW-Authenticate": 'Basic realm="files"'})
        if self.query is not None and query != self.query:
            return self.reply(handler, 403, b"signature does not match", head)
        if path not in self.files:
            return self.reply(handler, 404, b"not found", head)
        data = self.files[path]
        self.serve_bytes(handler, data, head, f'"{hashlib.md5(data).hexdigest()}"', self.modified)


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub(RangeServer):
    """The Hub's API calls that ``huggingface_hub`` makes to read a dataset (see the module's docstring)."""

    def __init__(self, token: str | None = None):
        super().__init__()
        self.token = token  # datasets in self.private need it
        self.private: set[str] = set()
        self.commits: dict[str, dict[str, dict[str, bytes]]] = {}  # repo → sha → {path: bytes}
        self.branches: dict[str, dict[str, str]] = {}  # repo → branch → sha

    def commit(self, repo: str, files: dict[str, bytes], branch: str = "main") -> str:
        """A new commit of ``files`` in ``repo`` (made if new), ``branch`` moved to it; its sha."""
        sha = hashlib.sha1(repr((repo, sorted(files.items()), len(self.commits.get(repo, {})))).encode()).hexdigest()
        self.commits.setdefault(repo, {})[sha] = dict(files)
        self.branches.setdefault(repo, {})[branch] = sha
        return sha

    @staticmethod
    def is_lfs(path: str) -> bool:
        return path.endswith(".parquet")

    def _entry(self, path: str, data: bytes) -> dict:
        entry = {"type": "file", "oid": _git_blob_id(data), "size": len(data), "path": path}
        if self.is_lfs(path):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return entry

    def _not_found(self, handler, code: str) -> None:
        self.reply(handler, 404, json.dumps({"error": code}).encode(), headers={"X-Error-Code": code,
                                                                               "Content-Type": "application/json"})

    def _json(self, handler, value) -> None:
        self.reply(handler, 200, json.dumps(value).encode(), headers={"Content-Type": "application/json"})

    def answer(self, handler: BaseHTTPRequestHandler, head: bool) -> None:
        split = urlsplit(handler.path)
        path = split.path
        lfs = re.fullmatch(r"/lfs/([0-9a-f]{64})", path)
        if lfs:
            for commits in self.commits.values():
                for files in commits.values():
                    for data in files.values():
                        if hashlib.sha256(data).hexdigest() == lfs[1]:
                            return self.serve_bytes(handler, data, head, f'"{lfs[1]}"', None)
            return self.reply(handler, 404, b"", head)
        route = re.fullmatch(r"(/api)?/datasets/([^/]+/[^/]+)/(revision|tree|paths-info|resolve)/([^/]+)(/.*)?", path)
        if route is None:
            return self.reply(handler, 404, b"", head)
        _, repo, call, revision, rest = route.groups()
        revision, rest = unquote(revision), unquote((rest or "/")[1:])
        if repo not in self.commits or (repo in self.private and
                                        handler.headers.get("Authorization") != f"Bearer {self.token}"):
            if repo in self.private:
                return self.reply(handler, 401, b"", head, {"X-Error-Code": "RepoNotFound"})
            return self._not_found(handler, "RepoNotFound")
        sha = self.branches[repo].get(revision, revision if revision in self.commits[repo] else None)
        if sha is None:
            return self._not_found(handler, "RevisionNotFound")
        files = self.commits[repo][sha]
        if call == "revision":
            return self._json(handler, {"id": repo, "sha": sha, "private": repo in self.private,
                                        "siblings": [{"rfilename": name} for name in sorted(files)]})
        if call == "tree":
            recursive = parse_qs(split.query).get("recursive", ["False"])[0].lower() == "true"
            prefix = f"{rest}/" if rest else ""
            names = [name for name in sorted(files) if name.startswith(prefix)
                     and (recursive or "/" not in name[len(prefix):])]
            return self._json(handler, [self._entry(name, files[name]) for name in names])
        if call == "paths-info":
            body = handler.rfile.read(int(handler.headers.get("Content-Length", 0))).decode()
            wanted = parse_qs(body).get("paths", [])
            return self._json(handler, [self._entry(name, files[name]) for name in wanted if name in files])
        if rest not in files:
            return self._not_found(handler, "EntryNotFound")
        data = files[rest]
        if self.is_lfs(rest):
            location = f"{self.url}/lfs/{hashlib.sha256(data).hexdigest()}"
            return self.reply(handler, 302, b"", head, {"Location": location, "X-Repo-Commit": sha})
        return self.serve_bytes(handler, data, head, f'"{_git_blob_id(data)}"', None)


@contextlib.contextmanager
def nothing_listening():
    """A loopback URL where no server listens (the port bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


def http_date(seconds: float) -> str:
    return email.utils.formatdate(seconds, usegmt=True)
