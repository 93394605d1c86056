"""``s3://bucket/key`` objects: the S3 scheme of :mod:`tokenmill.files.remote`'s interface.

Any S3-compatible store (AWS, MinIO, Ceph, R2, ...) through boto3, the library that Snakemake's own
``snakemake-storage-plugin-s3`` uses, so the ``[s3]`` extra adds no second client. Credentials and
endpoint come from boto3's standard chain: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and the shared config files, instance roles, and
``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) for a store other than AWS. No message, log or
sidecar of tokenmill ever holds a credential: errors name the URL and the endpoint's host only.

* **Globs.** A key may hold ``*``, ``?`` and ``[...]`` (``s3://b/raw/*.jsonl.zst``); the bucket is listed
  from the key's prefix before the first wildcard, and the matching keys are taken in sorted order.
* **Identity.** An object is one version of a key: its size, ETag and (in a versioned bucket) version id,
  from one ``HEAD``. Every read is pinned to it (``IfMatch`` on the ETag, and the version id where there is
  one): an object replaced under the same key during a read stops that read with one line.
* **Failures.** Each is one :class:`~tokenmill.errors.TokenmillError` line naming the URL: no such
  object or bucket, no permission, no credentials, an endpoint that does not answer (botocore's
  standard retries, :data:`~tokenmill.files.remote.ATTEMPTS` attempts in all, with 5 s to connect and 20 s
  per read), an object that changed during the read.

Cost: a ``HEAD`` per input, a ``LIST`` page per 1,000 keys of a glob's prefix, a ``GET`` per range read.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from urllib.parse import urlsplit

from tokenmill.errors import TokenmillError
from tokenmill.files.remote import (ATTEMPTS, CONNECT_SECONDS, READ_SECONDS, ObjectIdentity, bucket_and_key,
                                    expand_glob)

__all__ = ["PREFIXES", "split_url", "identity", "expand", "open_range"]

PREFIXES = ("s3://",)


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/key`` → ``(bucket, key)``.

    Raises:
        TokenmillError: no bucket or no key.
    """
    return bucket_and_key(url, "s3")


@lru_cache(maxsize=1)
def _client():
    """One boto3 S3 client per process (thread-safe), from the standard credential and endpoint chain."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise TokenmillError("reading s3:// inputs needs boto3: pip install 'tokenmill[s3]'") from None
    session = boto3.session.Session()
    config = Config(retries={"total_max_attempts": ATTEMPTS, "mode": "standard"}, connect_timeout=CONNECT_SECONDS,
                    read_timeout=READ_SECONDS, user_agent_extra="tokenmill")
    # A store other than AWS often has no region of its own; botocore then needs one to sign with.
    return session.client("s3", region_name=session.region_name or "us-east-1", config=config)


def _endpoint_host() -> str:
    """The endpoint's host and port, never its user part (which could hold a secret)."""
    return urlsplit(_client().meta.endpoint_url).netloc.rpartition("@")[2]


def _failure(url: str, exc: Exception, doing: str) -> TokenmillError:
    """One line naming ``url`` for a boto3/botocore exception raised while ``doing``."""
    from botocore import exceptions

    if isinstance(exc, exceptions.ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket":
            return TokenmillError(f"{url}: no such bucket")
        if code in ("NoSuchKey", "404", "NotFound") or status == 404:
            return TokenmillError(f"{url}: no such object")
        if code in ("AccessDenied", "403", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch") \
                or status == 403:
            return TokenmillError(f"{url}: permission denied ({code or status}) while {doing}; check the "
                                  f"credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE) and the bucket's policy")
        if code == "PreconditionFailed" or status == 412:
            return TokenmillError(f"{url}: the object changed during the read (its ETag is no longer the one "
                                  f"first seen); nothing was written, run again to read the new version")
        if code == "InvalidRange" or status == 416:
            return TokenmillError(f"{url}: the object is shorter than when it was first seen (changed?)")
        return TokenmillError(f"{url}: {code or status} while {doing}")
    if isinstance(exc, exceptions.NoCredentialsError):
        return TokenmillError(f"{url}: no credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                              f"AWS_PROFILE)")
    if isinstance(exc, (exceptions.EndpointConnectionError, exceptions.ConnectTimeoutError,
                        exceptions.ReadTimeoutError, exceptions.ConnectionClosedError)):
        return TokenmillError(f"{url}: the endpoint {_endpoint_host()} does not answer ({ATTEMPTS} attempts) "
                              f"while {doing}")
    return TokenmillError(f"{url}: {type(exc).__name__} while {doing}: {' '.join(str(exc).split())}")


def _boto_errors() -> tuple[type[Exception], ...]:
    from botocore.exceptions import BotoCoreError, ClientError

    return BotoCoreError, ClientError


def identity(url: str) -> ObjectIdentity:
    """The object's identity now (one ``HEAD``).

    Raises:
        TokenmillError: no such object, no permission, no credentials, no answer.
    """
    bucket, key = split_url(url)
    try:
        head = _client().head_object(Bucket=bucket, Key=key)
    except _boto_errors() as exc:
        failure = _failure(url, exc, "reading its metadata")
        if str(failure).endswith(": no such object"):  # a HEAD's 404 has no body to say which is missing
            failure = _missing_bucket(url, bucket) or failure
        raise failure from None
    version = head.get("VersionId")
    return ObjectIdentity(url, int(head["ContentLength"]), head["ETag"], None if version in (None, "null") else version)


def _missing_bucket(url: str, bucket: str) -> TokenmillError | None:
    """"No such bucket" where the bucket itself is missing (asked after a 404, so a message can say which)."""
    try:
        _client().head_bucket(Bucket=bucket)
    except _boto_errors() as exc:
        status = getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status == 404:
            return TokenmillError(f"{url}: no such bucket")
    return None


def expand(url: str) -> list[str]:
    """The object URLs a URL names: itself, or for a glob every matching key, sorted.

    Raises:
        TokenmillError: a glob that matches nothing, or a listing that fails (naming the URL).
    """
    bucket, key = split_url(url)

    def keys(prefix: str) -> Iterator[str]:
        for page in _client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            yield from (entry["Key"] for entry in page.get("Contents", []))

    try:
        return expand_glob(url, key, keys)
    except _boto_errors() as exc:
        raise _failure(url, exc, "listing the bucket") from None


@lru_cache(maxsize=1)
def _dropped_connection_errors() -> tuple[type[Exception], ...]:
    """What a body's read raises when its connection ends early."""
    from botocore.exceptions import (ConnectionError as BotoConnectionError, IncompleteReadError, ReadTimeoutError,
                                     ResponseStreamingError)
    from urllib3.exceptions import HTTPError

    return IncompleteReadError, ResponseStreamingError, ReadTimeoutError, BotoConnectionError, HTTPError


class _Body:
    """A ``GET``'s streaming body, its dropped connections raised as ``ConnectionError``."""

    def __init__(self, body):
        self._body = body

    def read(self, size: int) -> bytes:
        try:
            return self._body.read(size)
        except _dropped_connection_errors() as exc:
            raise ConnectionError(str(exc)) from None

    def close(self) -> None:
        self._body.close()


def open_range(identity: ObjectIdentity, start: int, end: int) -> _Body:
    """One ``GET`` of bytes ``[start, end)`` of the version ``identity`` (``IfMatch`` its ETag, and its version).

    Raises:
        TokenmillError: the object changed, is gone or is shorter; no permission; no answer.
    """
    bucket, key = split_url(identity.url)
    pinned = {"IfMatch": identity.etag, **({"VersionId": identity.version_id} if identity.version_id else {})}
    try:
        response = _client().get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}", **pinned)
    except _boto_errors() as exc:
        raise _failure(identity.url, exc, f"reading from byte {start}") from None
    return _Body(response["Body"])
