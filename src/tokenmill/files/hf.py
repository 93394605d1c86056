"""``hf://datasets/ORG/NAME[@REVISION]/PATH`` files of a Hugging Face Hub dataset: the Hub scheme of
:mod:`tokenmill.files.remote`'s interface, through ``huggingface_hub`` (the ``[hf]`` extra).

* **Revision.** ``@REVISION`` is a branch, a tag or a commit (``main`` when absent; ``refs/pr/1`` spelt
  ``refs%2Fpr%2F1``). It is resolved to a commit sha once per process (``HfApi.dataset_info``), every
  listing and read of the process is of that commit, and the sidecar records it (``object.revision``):
  a branch moved since is a changed input for the plan. A workflow job reads the commit its plan pinned
  (:func:`at_revision`, through ``--pin``), not the one its branch names when the job starts.
* **Globs.** ``PATH`` may hold ``*``, ``?``, ``[...]`` and ``**`` (``hf://datasets/o/n/train/*.parquet``):
  the commit's tree is listed recursively from the folder before the first wildcard
  (``HfApi.list_repo_tree``) and the matching files taken in sorted order.
* **Identity.** One ``paths-info`` call per file: its size and content id (the LFS sha256, else the git blob
  id), recorded as ``object.etag``.
* **Reads.** A ``GET`` of the file's ``resolve`` URL at the commit with ``Range`` (Parquet: its footer, then
  the column chunks it needs; JSONL streamed), through ``huggingface_hub``'s own HTTP session, which
  follows the Hub's redirect to its storage and drops the token on that other host.
* **Token** from ``HF_TOKEN`` or ``huggingface_hub``'s own login (``hf auth login``), sent only by
  ``huggingface_hub``'s headers; never in a message, log or sidecar. ``HF_ENDPOINT`` names another Hub.
* **Failures**, each one line naming the URL: no such dataset (or no access), no such revision, no such
  file, a glob that matches nothing, a Hub that does not answer or answers too slowly
  (:data:`~tokenmill.files.remote.MIN_BYTES_PER_SECOND`), redirects in a loop.

Cost: one revision call per dataset and process, a listing per glob, one ``paths-info`` per file, and the
bytes read, each range one request.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from urllib.parse import unquote, urlsplit

from tokenmill.errors import TokenmillError
from tokenmill.files.remote import ATTEMPTS, CONNECT_SECONDS, READ_SECONDS, ObjectIdentity, expand_glob

__all__ = ["PREFIXES", "split_url", "at_revision", "identity", "expand", "open_range"]

PREFIXES = ("hf://",)
_URL = re.compile(r"hf://datasets/(?P<repo>[^/@]+/[^/@]+)(?:@(?P<revision>[^/]+))?/(?P<path>.+)")


def split_url(url: str) -> tuple[str, str | None, str]:
    """``hf://datasets/org/name@rev/path`` → ``("org/name", "rev", "path")`` (revision None when absent).

    Raises:
        TokenmillError: not a Hub dataset URL.
    """
    match = _URL.fullmatch(url)
    if match is None:
        raise TokenmillError(f"{url}: not a Hub dataset URL; give hf://datasets/ORG/NAME[@REVISION]/PATH")
    revision = match["revision"]
    return match["repo"], None if revision is None else unquote(revision), match["path"]


def at_revision(url: str, commit: str) -> str:
    """The URL of the same file at ``commit`` (what a job reads: the commit its plan pinned).

    Raises:
        TokenmillError: not a Hub dataset URL.
    """
    repo, _, path = split_url(url)
    return f"hf://datasets/{repo}@{commit}/{path}"


def _hub():
    """``huggingface_hub``, or one line saying how to install it."""
    try:
        return importlib.import_module("huggingface_hub")
    except ImportError:
        raise TokenmillError("reading hf:// inputs needs huggingface_hub: pip install 'tokenmill[hf]'") from None


def _endpoint() -> str:
    """The Hub's address: ``HF_ENDPOINT`` as now set, else huggingface_hub's default."""
    return (os.environ.get("HF_ENDPOINT") or _hub().constants.ENDPOINT).rstrip("/")


def _api():
    return _hub().HfApi(endpoint=_endpoint(), library_name="tokenmill")


def _failure(url: str, exc: Exception, doing: str) -> TokenmillError:
    """One line naming ``url`` for an exception of huggingface_hub or of its HTTP client."""
    errors = _hub().errors
    repo, revision, _ = split_url(url)
    if isinstance(exc, errors.RevisionNotFoundError):
        return TokenmillError(f"{url}: no such revision {revision!r} of the dataset {repo}")
    if isinstance(exc, errors.GatedRepoError):
        return TokenmillError(f"{url}: the dataset {repo} is gated; accept its terms on the Hub and set HF_TOKEN "
                              f"(or run `hf auth login`)")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return TokenmillError(f"{url}: no such dataset {repo}, or no access to it (a private dataset needs "
                              f"HF_TOKEN or `hf auth login`)")
    if isinstance(exc, errors.EntryNotFoundError):
        return TokenmillError(f"{url}: no such file")
    if isinstance(exc, errors.HfHubHTTPError):
        status = getattr(exc.response, "status_code", None)
        if status in (401, 403):
            return TokenmillError(f"{url}: permission denied (HTTP {status}) while {doing}; check HF_TOKEN")
        return TokenmillError(f"{url}: HTTP {status} while {doing}")
    if isinstance(exc, (_transport_error(), OSError)):
        return TokenmillError(f"{url}: the Hub {urlsplit(_endpoint()).netloc} does not answer ({type(exc).__name__}) "
                              f"while {doing}")
    return TokenmillError(f"{url}: {type(exc).__name__} while {doing}")


@lru_cache(maxsize=1)
def _transport_error() -> type[Exception]:
    """The HTTP client's (httpx's, or httpx2's) error for a connection that failed or was lost."""
    session = _hub().utils.get_session()
    return importlib.import_module(type(session).__module__.split(".")[0]).TransportError


def _redirect_loop_error() -> type[Exception]:
    """The HTTP client's error for more redirects in a row than its session follows (``max_redirects``)."""
    return importlib.import_module(_transport_error().__module__.split(".")[0]).TooManyRedirects


def _hub_errors() -> tuple[type[Exception], ...]:
    return _hub().errors.HfHubHTTPError, _hub().errors.EntryNotFoundError, _transport_error(), OSError


@lru_cache(maxsize=None)
def _commit(endpoint: str, repo: str, revision: str | None) -> str:
    """The commit sha ``revision`` of the dataset ``repo`` names now: asked once per process and Hub
    (``endpoint`` keys the cache only); huggingface_hub's exception where it fails."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _api().dataset_info(repo, revision=revision or "main", timeout=CONNECT_SECONDS + READ_SECONDS).sha
        except _transport_error():
            if attempt == ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _resolved(url: str) -> tuple[str, str, str]:
    """``(repo, commit sha, path)`` of a Hub URL, its revision resolved (once per process).

    Raises:
        TokenmillError: not a Hub URL, no such dataset or revision, no answer.
    """
    repo, revision, path = split_url(url)
    try:
        return repo, _commit(_endpoint(), repo, revision), path
    except _hub_errors() as exc:
        raise _failure(url, exc, "resolving its revision") from None


def identity(url: str) -> ObjectIdentity:
    """The file's identity at the resolved commit (one ``paths-info`` call).

    Raises:
        TokenmillError: no such dataset, revision or file; no permission; no answer.
    """
    repo, commit, path = _resolved(url)
    try:
        found = _api().get_paths_info(repo, [path], revision=commit, repo_type="dataset")
    except _hub_errors() as exc:
        raise _failure(url, exc, "reading its metadata") from None
    entry = next((item for item in found if getattr(item, "path", None) == path), None)
    if entry is None or not hasattr(entry, "size"):
        raise TokenmillError(f"{url}: no such file" + (" (a folder)" if entry is not None else ""))
    content_id = entry.lfs.sha256 if entry.lfs is not None else entry.blob_id
    return ObjectIdentity(url, int(entry.size), content_id, revision=commit)


def expand(url: str) -> list[str]:
    """The file URLs a URL names: itself, or for a glob every matching file at the commit, sorted.

    Raises:
        TokenmillError: a glob that matches nothing, or a listing that fails (naming the URL).
    """
    repo, _, path = split_url(url)

    def files(prefix: str) -> Iterator[str]:
        _, commit, _ = _resolved(url)
        tree = _api().list_repo_tree(repo, path_in_repo=prefix.rpartition("/")[0] or None, revision=commit,
                                     repo_type="dataset", recursive=True)
        return (item.path for item in tree if hasattr(item, "size"))  # files: a folder has no size

    try:
        return expand_glob(url, path, files, "file")
    except _hub_errors() as exc:
        raise _failure(url, exc, "listing the dataset") from None


class _Body:
    """A streamed response's bytes, its dropped connections raised as ``ConnectionError``."""

    def __init__(self, response):
        self._response = response
        self._chunks = response.iter_bytes()
        self._left = b""

    def read(self, size: int) -> bytes:
        if not self._left:
            try:
                self._left = next(self._chunks, b"")
            except _transport_error() as exc:
                raise ConnectionError(str(exc)) from None
        data, self._left = self._left[:size], self._left[size:]
        return data

    def close(self) -> None:
        self._response.close()


def open_range(identity: ObjectIdentity, start: int, end: int) -> _Body:
    """One ranged ``GET`` of bytes ``[start, end)`` of the file at the pinned commit.

    Raises:
        TokenmillError: no such file, no permission, no answer, the range refused.
    """
    hub = _hub()
    repo, _, path = split_url(identity.url)
    address = hub.hf_hub_url(repo, path, repo_type="dataset", revision=identity.revision, endpoint=_endpoint())
    session = hub.utils.get_session()
    headers = {**hub.utils.build_hf_headers(library_name="tokenmill"), "Range": f"bytes={start}-{end - 1}",
               "Accept-Encoding": "identity"}
    doing = f"reading from byte {start}"
    for attempt in range(1, ATTEMPTS + 1):
        try:
            response = session.send(session.build_request("GET", address, headers=headers,
                                                          timeout=CONNECT_SECONDS + READ_SECONDS),
                                    stream=True, follow_redirects=True)
            break
        except _redirect_loop_error():
            raise TokenmillError(f"{identity.url}: the Hub's redirects go round in a loop (more than "
                                 f"{session.max_redirects}) while {doing}") from None
        except _transport_error() as exc:
            if attempt == ATTEMPTS:
                raise _failure(identity.url, exc, doing) from None
    if response.status_code in (200, 206):
        if response.status_code == 200 and (start, end) != (0, identity.size):
            response.close()
            raise TokenmillError(f"{identity.url}: the Hub answered a range request with the whole file")
        return _Body(response)
    response.read()
    response.close()
    if response.status_code == 404:
        raise TokenmillError(f"{identity.url}: no such file at revision {identity.revision}")
    if response.status_code in (401, 403):
        raise TokenmillError(f"{identity.url}: permission denied (HTTP {response.status_code}) while {doing}; "
                             f"check HF_TOKEN")
    if response.status_code == 416:
        raise TokenmillError(f"{identity.url}: the file is shorter than its listing said")
    raise TokenmillError(f"{identity.url}: HTTP {response.status_code} while {doing}")
