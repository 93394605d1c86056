"""Inputs in object storage: ``s3://bucket/key`` URLs listed, identified and read as streams.

Any S3-compatible store (AWS, MinIO, Ceph, R2, ...) through boto3, the library that Snakemake's own
``snakemake-storage-plugin-s3`` uses, so the ``[s3]`` extra adds no second client. Credentials and
endpoint come from boto3's standard chain: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and the shared config files, instance roles, and
``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) for a store other than AWS. No message, log or
sidecar of tokenmill ever holds a credential: errors name the URL and the endpoint's host only.

* **Globs.** A key may hold ``*``, ``?`` and ``[...]`` (``s3://b/raw/*.jsonl.zst``); ``*`` stays
  within one ``/`` level and ``**`` crosses levels. The bucket is listed from the key's prefix before
  the first wildcard, and the matching keys are taken in sorted order.
* **Identity.** An object is one version of a key: its size, ETag and (in a versioned bucket)
  version id, from one ``HEAD`` (:class:`ObjectIdentity`). Every read is pinned to it (``IfMatch`` on
  the ETag, and the version id where there is one): an object replaced under the same key during a
  read stops that read with one line, and a replaced object is a stale input for ``verify``.
* **Streams.** :func:`open_object` reads an object, or a byte range of it, with one ranged ``GET`` as a
  stream of 8 MiB reads: memory stays bounded whatever the object's size, and nothing is copied to
  local disk. A connection lost mid-stream (reset, stalled past the read timeout, or closed short of its
  length) resumes from the last byte handed over: the end of the last whole 8 MiB read, or of what a body
  cut short held (a ``GET`` of the rest, pinned to the same ETag). A stream fails, as truncated, after
  :data:`ATTEMPTS` drops in a row that bring no byte, or after ``10 * ATTEMPTS`` drops in all.
  tests/fault_proxy.py makes each fault on a loopback proxy.
  :class:`ObjectFile` is a seekable view by ranged ``GET``s, for Parquet footers and row groups.
* **Failures.** Each is one :class:`~tokenmill.errors.TokenmillError` line naming the URL: no such
  object or bucket, no permission, no credentials, an endpoint that does not answer (botocore's
  standard retries, :data:`ATTEMPTS` attempts in all, with 5 s to connect and 20 s per read), a truncated
  object, or one that changed during the read.

Cost: a ``HEAD`` per input, a ``LIST`` page per 1,000 keys of a glob's prefix, and the object's bytes
once, streamed.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from tokenmill.errors import TokenmillError

__all__ = ["SCHEMES", "ATTEMPTS", "is_url", "split_url", "ObjectIdentity", "object_identity", "pin", "pinned_identity",
           "expand_url",
           "open_object", "ObjectFile", "read_object_range"]

SCHEMES = ("s3://",)
ATTEMPTS = 3
_READ_BYTES = 8 << 20  # bytes per read of a stream: what a caller's read(n) asks for at most at once
# Bytes per read of a response body: a connection dropped mid-read loses at most these (fetched again). Not
# smaller: 1 MiB reads made a 256 MiB stream from a loopback server 2.2x slower than 8 MiB (median 3.3 against
# 1.5 s, botocore's and urllib3's cost per read), and a drop is rare.
_PIECE_BYTES = _READ_BYTES
_MAX_RESUMES = 10 * ATTEMPTS  # drops in all that one stream survives, each one after some progress
# A store that accepts the connection but sends nothing for this long is not answering: ATTEMPTS tries then
# take a minute, not the four of botocore's defaults.
_CONNECT_SECONDS, _READ_SECONDS = 5, 20
_WILDCARDS = re.compile(r"[*?\[]")


def is_url(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an object in storage (``s3://...``) rather than a local file."""
    return isinstance(path, str) and path.startswith(SCHEMES)


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/key`` → ``(bucket, key)``.

    Raises:
        TokenmillError: no bucket or no key.
    """
    bucket, _, key = url[len("s3://"):].partition("/")
    if not url.startswith("s3://") or not bucket or not key:
        raise TokenmillError(f"{url}: not an object URL; give s3://BUCKET/KEY")
    return bucket, key


@lru_cache(maxsize=1)
def _client():
    """One boto3 S3 client per process (thread-safe), from the standard credential and endpoint chain."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise TokenmillError("reading s3:// inputs needs boto3: pip install 'tokenmill[s3]'") from None
    session = boto3.session.Session()
    config = Config(retries={"total_max_attempts": ATTEMPTS, "mode": "standard"}, connect_timeout=_CONNECT_SECONDS,
                    read_timeout=_READ_SECONDS, user_agent_extra="tokenmill")
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


@dataclass(frozen=True)
class ObjectIdentity:
    """One version of an object: what tells it from another written under the same key."""

    url: str
    size: int
    etag: str
    version_id: str | None = None

    def sidecar_entry(self) -> dict:
        """The sidecar's ``object`` of an input read from storage."""
        return {"etag": self.etag, "version_id": self.version_id, "size": self.size}

    def pin(self) -> dict:
        """The ``GET`` arguments that read exactly this version."""
        pinned = {"IfMatch": self.etag}
        if self.version_id:
            pinned["VersionId"] = self.version_id
        return pinned


def object_identity(url: str) -> ObjectIdentity:
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


# The version of each object this process reads: taken once (pin), so that every read of a job is of it.
_pinned: dict[str, ObjectIdentity] = {}


def pin(url: str) -> ObjectIdentity:
    """Take the object's identity now and read that version from here on (a job pins its inputs as it
    starts; an object replaced later is then found out by ``IfMatch`` instead of read half old, half new).

    Raises:
        TokenmillError: as :func:`object_identity`.
    """
    _pinned[url] = identity = object_identity(url)
    return identity


def pinned_identity(url: str) -> ObjectIdentity:
    """The version of ``url`` this process reads: pinned already, or pinned now.

    Raises:
        TokenmillError: as :func:`object_identity`.
    """
    return _pinned.get(url) or pin(url)


def _missing_bucket(url: str, bucket: str) -> TokenmillError | None:
    """"No such bucket" where the bucket itself is missing (asked after a 404, so a message can say which)."""
    try:
        _client().head_bucket(Bucket=bucket)
    except _boto_errors() as exc:
        status = getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status == 404:
            return TokenmillError(f"{url}: no such bucket")
    return None


def _key_pattern(pattern: str) -> re.Pattern:
    """A glob over keys: ``*`` and ``?`` within one ``/`` level, ``**`` across levels, ``[...]`` a class."""
    parts, position = [], 0
    for match in re.finditer(r"\*\*|\*|\?|\[[^\]]*\]", pattern):
        parts.append(re.escape(pattern[position:match.start()]))
        token = match.group()
        parts.append(".*" if token == "**" else "[^/]*" if token == "*" else "[^/]" if token == "?"
                     else "[" + token[1:-1].replace("\\", "\\\\").replace("!", "^", 1 if token[1:2] == "!" else 0)
                     + "]")
        position = match.end()
    parts.append(re.escape(pattern[position:]))
    return re.compile("".join(parts))


def expand_url(url: str) -> list[str]:
    """The object URLs a URL names: itself, or for a glob every matching key, sorted.

    Raises:
        TokenmillError: a glob that matches nothing, or a listing that fails (naming the URL).
    """
    bucket, key = split_url(url)
    wildcard = _WILDCARDS.search(key)
    if wildcard is None:
        return [url]
    prefix, pattern = key[:wildcard.start()], _key_pattern(key)
    keys = []
    try:
        for page in _client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys += [entry["Key"] for entry in page.get("Contents", []) if pattern.fullmatch(entry["Key"])]
    except _boto_errors() as exc:
        raise _failure(url, exc, "listing the bucket") from None
    if not keys:
        raise TokenmillError(f"{url}: matches no object")
    return [f"s3://{bucket}/{name}" for name in sorted(keys)]


@lru_cache(maxsize=1)
def _dropped_connection_errors() -> tuple[type[Exception], ...]:
    """What a stream's read raises when its connection ends early (ValueError: a body already closed)."""
    from botocore.exceptions import (ConnectionError as BotoConnectionError, IncompleteReadError, ReadTimeoutError,
                                     ResponseStreamingError)
    from urllib3.exceptions import HTTPError

    return (IncompleteReadError, ResponseStreamingError, ReadTimeoutError, BotoConnectionError, HTTPError, OSError,
            ValueError)


class _ObjectStream(io.RawIOBase):
    """The bytes ``[start, end)`` of one object version, streamed (see :func:`open_object`)."""

    def __init__(self, identity: ObjectIdentity, start: int, end: int):
        super().__init__()
        self.identity, self.position, self.end = identity, start, end
        self._body = None
        self._failures = 0  # drops in a row with no byte gained
        self._resumes = 0  # drops in all

    def readable(self) -> bool:
        return True

    def _open(self) -> None:
        bucket, key = split_url(self.identity.url)
        try:
            response = _client().get_object(Bucket=bucket, Key=key, Range=f"bytes={self.position}-{self.end - 1}",
                                            **self.identity.pin())
        except _boto_errors() as exc:
            raise _failure(self.identity.url, exc, f"reading from byte {self.position}") from None
        self._body = response["Body"]

    def read(self, size: int = -1) -> bytes:
        wanted = self.end - self.position if size is None or size < 0 else min(size, self.end - self.position)
        wanted = min(wanted, _READ_BYTES)
        pieces, got = [], 0
        while got < wanted:
            if self._body is None:
                self._open()
            try:
                data = self._body.read(min(wanted - got, _PIECE_BYTES))
            except _dropped_connection_errors():
                data = None
            if data:
                pieces.append(data)
                got += len(data)
                self.position += len(data)
                self._failures = 0
                continue
            # The connection ended early (dropped, stalled, or the body stops short): resume with the rest,
            # pinned; what this read has so far is returned first.
            self._body.close()
            self._body = None
            self._failures += 1
            self._resumes += 1
            if self._failures >= ATTEMPTS:
                raise TokenmillError(f"{self.identity.url}: truncated: the stream stopped at byte {self.position} "
                                     f"of {self.end} ({ATTEMPTS} attempts); nothing was written")
            if self._resumes > _MAX_RESUMES:
                raise TokenmillError(f"{self.identity.url}: the connection dropped {self._resumes} times before byte "
                                     f"{self.position} of {self.end}; nothing was written")
            if pieces:
                break
        return b"".join(pieces)

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None
        super().close()


def open_object(identity: ObjectIdentity, start: int = 0, end: int | None = None) -> io.RawIOBase:
    """A stream of bytes ``[start, end)`` of the object version ``identity`` (``end`` None: its end).

    Each read returns at most 8 MiB; a connection lost mid-stream resumes from where it stopped.

    Raises:
        TokenmillError: (on a read) the object changed, is gone, or ends early; no permission; no answer.
    """
    return _ObjectStream(identity, start, identity.size if end is None else min(end, identity.size))


def read_object_range(identity: ObjectIdentity, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of the object version ``identity``, in one ranged ``GET``.

    Raises:
        TokenmillError: as :func:`open_object`.
    """
    with open_object(identity, start, end) as stream:
        chunks = []
        while chunk := stream.read():
            chunks.append(chunk)
    return b"".join(chunks)


class ObjectFile(io.RawIOBase):
    """A seekable, read-only file over one object version, each read a ranged ``GET`` (Parquet reads
    its footer, then the column chunks it needs, by offset)."""

    def __init__(self, identity: ObjectIdentity):
        super().__init__()
        self.identity, self._position = identity, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.identity.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def size(self) -> int:
        return self.identity.size

    def read(self, size: int = -1) -> bytes:
        end = self.identity.size if size is None or size < 0 else min(self._position + size, self.identity.size)
        if end <= self._position:
            return b""
        data = read_object_range(self.identity, self._position, end)
        self._position += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
