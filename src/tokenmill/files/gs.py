"""``gs://bucket/key`` objects in Google Cloud Storage: the GCS scheme of :mod:`tokenmill.files.remote`'s
interface, through ``google-cloud-storage`` (the ``[gs]`` extra).

``google-cloud-storage`` rather than ``gcsfs``: gcsfs is built on it and adds aiohttp, grpc and oauthlib,
and it is the client Snakemake's ``snakemake-storage-plugin-gcs`` uses, so one library would serve a
workflow on a ``gs://`` prefix too. Credentials are Google's Application Default Credentials
(``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth application-default login``, a VM's service account);
``STORAGE_EMULATOR_HOST`` names an emulator. Errors name the URL, never a credential.

* **Globs.** A key may hold ``*``, ``?``, ``[...]`` and ``**``: the bucket is listed from the key's prefix
  before the first wildcard, and the matching keys are taken in sorted order.
* **Identity.** One metadata ``GET``: the size, ETag and generation, which the sidecar records
  (``object.version_id``: the generation). Every read asks for that generation: an object replaced since
  is read as it was where the bucket keeps old generations, and otherwise stops the read with one line.
* **Reads.** A stream is one ranged media ``GET`` whose body is read as it arrives, through the client's
  authorized session (5 s to connect, 20 s per read); a connection lost mid-body (reset, stalled, cut short)
  resumes from the last byte received, pinned to the generation (:class:`~tokenmill.files.remote.ObjectStream`),
  not by the client's own retries, which would fetch the range again. Parquet reads its footer and column
  chunks by range.
* **Failures**, each one line naming the URL: no such object or bucket, no permission, no credentials, a
  store that does not answer (the client's retries, cut to :data:`RETRY_SECONDS`).

Cost: one metadata request per input, a listing page per 1,000 keys of a glob's prefix, one request per
stream or Parquet read.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from urllib.parse import quote

from tokenmill.errors import TokenmillError
from tokenmill.files.remote import CONNECT_SECONDS, READ_SECONDS, ObjectIdentity, bucket_and_key, expand_glob

__all__ = ["PREFIXES", "RETRY_SECONDS", "split_url", "identity", "expand", "open_range"]

PREFIXES = ("gs://",)
RETRY_SECONDS = 15  # how long the client retries a request that finds no answer or a 5xx, in all


def split_url(url: str) -> tuple[str, str]:
    """``gs://bucket/key`` → ``(bucket, key)``.

    Raises:
        TokenmillError: no bucket or no key.
    """
    return bucket_and_key(url, "gs")


def _storage():
    try:
        from google.cloud import storage
    except ImportError:
        raise TokenmillError("reading gs:// inputs needs google-cloud-storage: pip install 'tokenmill[gs]'") from None
    return storage


@lru_cache(maxsize=1)
def _client():
    """One client per process, from the Application Default Credentials (anonymous for an emulator)."""
    return _storage().Client()


def _call_options() -> dict:
    from google.cloud.storage.retry import DEFAULT_RETRY

    return {"timeout": (CONNECT_SECONDS, READ_SECONDS), "retry": DEFAULT_RETRY.with_timeout(RETRY_SECONDS)}


def _failure(url: str, exc: Exception, doing: str) -> TokenmillError:
    """One line naming ``url`` for an exception of the client, raised while ``doing``."""
    import requests
    from google.api_core import exceptions
    from google.auth.exceptions import DefaultCredentialsError

    if isinstance(exc, DefaultCredentialsError):
        return TokenmillError(f"{url}: no credentials found (set GOOGLE_APPLICATION_CREDENTIALS, or run gcloud auth "
                              f"application-default login)")
    if isinstance(exc, exceptions.NotFound):
        return TokenmillError(f"{url}: no such object")
    if isinstance(exc, (exceptions.Forbidden, exceptions.Unauthorized)):
        return TokenmillError(f"{url}: permission denied (HTTP {exc.code}) while {doing}; check the credentials "
                              f"(GOOGLE_APPLICATION_CREDENTIALS) and the bucket's permissions")
    if isinstance(exc, (exceptions.RetryError, requests.exceptions.ConnectionError, requests.exceptions.Timeout)):
        return TokenmillError(f"{url}: the store does not answer (retried for {RETRY_SECONDS} s) while {doing}")
    if isinstance(exc, exceptions.GoogleAPICallError):
        return TokenmillError(f"{url}: HTTP {exc.code} while {doing}")
    return TokenmillError(f"{url}: {type(exc).__name__} while {doing}: {' '.join(str(exc).split())[:200]}")


def _client_errors() -> tuple[type[Exception], ...]:
    from google.api_core.exceptions import GoogleAPICallError, RetryError
    from google.auth.exceptions import GoogleAuthError
    from requests.exceptions import RequestException

    return GoogleAPICallError, RetryError, GoogleAuthError, RequestException, OSError


def identity(url: str) -> ObjectIdentity:
    """The object's identity now (one metadata ``GET``): size, ETag, generation.

    Raises:
        TokenmillError: no such object or bucket, no permission, no credentials, no answer.
    """
    bucket, key = split_url(url)
    try:
        blob = _client().bucket(bucket).get_blob(key, **_call_options())
        if blob is None:
            missing = "no such object" if _client().bucket(bucket).exists(**_call_options()) else "no such bucket"
            raise TokenmillError(f"{url}: {missing}")
    except _client_errors() as exc:
        raise _failure(url, exc, "reading its metadata") from None
    return ObjectIdentity(url, int(blob.size), blob.etag or "", version_id=str(blob.generation))


def expand(url: str) -> list[str]:
    """The object URLs a URL names: itself, or for a glob every matching key, sorted.

    Raises:
        TokenmillError: a glob that matches nothing, or a listing that fails (naming the URL).
    """
    bucket, key = split_url(url)

    def keys(prefix: str) -> Iterator[str]:
        return (blob.name for blob in _client().list_blobs(bucket, prefix=prefix, **_call_options()))

    try:
        return expand_glob(url, key, keys)
    except _client_errors() as exc:
        failure = _failure(url, exc, "listing the bucket")
        raise (TokenmillError(f"{url}: no such bucket") if str(failure).endswith(": no such object") else failure) \
            from None


class _Body:
    """A ranged media ``GET``'s streaming body, its dropped connections raised as ``ConnectionError``."""

    def __init__(self, response):
        self._response = response

    def read(self, size: int) -> bytes:
        from urllib3.exceptions import HTTPError

        try:
            return self._response.raw.read(size)
        except (HTTPError, OSError) as exc:
            raise ConnectionError(str(exc)) from None

    def close(self) -> None:
        self._response.close()


def open_range(identity: ObjectIdentity, start: int, end: int) -> _Body:
    """One ranged media ``GET`` of bytes ``[start, end)`` of the generation ``identity``, streamed.

    The request goes through the client's own authorized session (its credentials, its endpoint or the
    emulator's), but the body is read as it arrives rather than by ``download_as_bytes``, so that a
    connection lost mid-body resumes from the last byte handed over (:class:`~tokenmill.files.remote.ObjectStream`)
    instead of the client fetching the whole range again; no answer or a 5xx is retried for :data:`RETRY_SECONDS`.

    Raises:
        TokenmillError: the object changed or is gone; no permission; no answer; ranges ignored.
    """
    from google.api_core.exceptions import NotFound, from_http_response

    bucket, key = split_url(identity.url)
    client = _client()
    media = (f"{client.api_endpoint}/download/storage/v1/b/{quote(bucket, safe='')}/o/{quote(key, safe='')}"
             f"?alt=media&generation={identity.version_id}")
    headers = {"Range": f"bytes={start}-{end - 1}", "Accept-Encoding": "identity"}

    def get():
        response = client._http.get(media, headers=headers, stream=True, timeout=(CONNECT_SECONDS, READ_SECONDS))
        if response.status_code >= 400:
            response.close()
            raise from_http_response(response)
        return response

    try:
        response = _call_options()["retry"](get)()
    except NotFound:  # the generation pinned is gone: replaced in a bucket that keeps none
        raise TokenmillError(f"{identity.url}: the object changed during the read (its generation is no longer "
                             f"there); nothing was written, run again to read the new version") from None
    except _client_errors() as exc:
        raise _failure(identity.url, exc, f"reading from byte {start}") from None
    total = response.headers.get("Content-Range", "").rpartition("/")[2]
    if response.status_code == 206 and total.isdigit() and int(total) != identity.size:
        response.close()
        raise TokenmillError(f"{identity.url}: the object changed during the read (its size is no longer the one "
                             f"first seen); nothing was written, run again to read the new version")
    if response.status_code != 206 and (start, end) != (0, identity.size):
        response.close()
        raise TokenmillError(f"{identity.url}: the store ignored a range request (HTTP {response.status_code})")
    return _Body(response)
