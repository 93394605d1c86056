"""The URL schemes tokenmill reads, in one table, and the secrets a URL may carry, kept out of every output.

* **Schemes.** :data:`SCHEMES` lists each scheme tokenmill reads (its prefix, the module that reads it, what it
  names, whether its paths may hold globs, and what pins a version of it); :func:`is_url`, the dispatch in
  :mod:`tokenmill.files.objects`, the one-line error for an unknown scheme (:func:`listed`), the URLs found in a
  message (:func:`redact_text`) and the commands' help (:func:`schemes_help`) are made from it.
* **Redaction.** :func:`redact` gives a URL's *name*: the URL with its user info (``user:password@``,
  ``token@``) replaced by ``***@`` and the value of every query parameter that may be a secret replaced by
  ``***``: AWS's ``X-Amz-*`` (presigned S3 URLs), Google's ``X-Goog-*`` (signed GCS URLs), Azure's SAS ``sig``
  and ``se``, and any parameter whose name holds ``token``, ``signature``, ``sig``, ``key``, ``credential``,
  ``secret``, ``password`` or ``auth``. Sidecars, logs, errors, summaries, reports, plan records and the
  workflow's commands and params name a URL by its name only; :func:`redact_text` redacts every URL in a
  message, the last guard of an error line.
* **Full URLs.** A name is mapped back to its full URL only where a request is made (:func:`full_url`): from
  the URLs this process was given (:func:`remember`), else from ``TOKENMILL_URLS``, the JSON list of full URLs
  that the workflow sets, from the user's config, in the environment of its jobs (:func:`urls_variable`):
  never on a command line, which ``ps`` shows and Snakemake records. A name no URL maps to is refused in
  one line.

Cost: a regex and a split per URL; nothing is read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from tokenmill.errors import TokenmillError

__all__ = ["Scheme", "SCHEMES", "PREFIXES", "URLS_VARIABLE", "REDACTED", "scheme_of", "is_url", "listed",
           "schemes_help", "redact", "redact_text", "remember", "full_url", "refuse_shared_names", "urls_variable",
           "user_info"]


@dataclass(frozen=True)
class Scheme:
    """One URL scheme tokenmill reads: ``prefix`` (``s3://``), the module of :mod:`tokenmill.files` that reads
    it, what it names, whether its paths may hold globs, and what pins one version of an object."""

    prefix: str
    module: str
    names: str
    globs: bool
    pinned_by: str


SCHEMES = (
    Scheme("s3://", "s3", "an object in S3 or an S3-compatible store", True, "ETag (and version id)"),
    Scheme("gs://", "gs", "an object in Google Cloud Storage", True, "generation"),
    Scheme("https://", "https", "a file on a web server", False, "ETag and Last-Modified"),
    Scheme("http://", "https", "a file on a web server", False, "ETag and Last-Modified"),
    Scheme("hf://", "hf", "a file of a Hugging Face Hub dataset (hf://datasets/ORG/NAME[@REV]/PATH)", True,
           "commit"),
)
PREFIXES = tuple(scheme.prefix for scheme in SCHEMES)
URLS_VARIABLE = "TOKENMILL_URLS"
REDACTED = "***"

# Query parameters whose value may be a secret: by prefix (presigned S3, signed GCS), Azure SAS's expiry (its sig
# is a word below), and by a word in the name.
_SECRET_PREFIXES = ("x-amz-", "x-goog-")
_SECRET_NAMES = {"se"}
_SECRET_WORDS = re.compile(r"token|signature|sig|key|credential|secret|password|passwd|auth", re.IGNORECASE)
# A URL inside a message: from a known scheme up to whitespace or a quote; trailing punctuation is the message's.
_URL_IN_TEXT = re.compile(f"(?:{'|'.join(map(re.escape, PREFIXES))})" + r"[^\s'\"<>`]+")
_TRAILING = ":,;.)]}"
# A message's "URL:LINE:" (a bad line's number, or LINE:COLUMN): the numbers are the message's, never a secret value's.
_LINE_NUMBERS = re.compile(r"(?::[0-9]+)+:$")


def scheme_of(url: str) -> Scheme:
    """The scheme ``url`` starts with.

    Raises:
        TokenmillError: not a URL of a scheme tokenmill reads (naming them all).
    """
    for scheme in SCHEMES:
        if url.startswith(scheme.prefix):
            return scheme
    raise TokenmillError(f"{redact(url)}: not a URL tokenmill reads (give {listed()})")


def listed() -> str:
    """The prefixes of :data:`SCHEMES` as a sentence lists them: ``s3://, gs://, ... or hf://``."""
    return f"{', '.join(PREFIXES[:-1])} or {PREFIXES[-1]}"


def schemes_help() -> str:
    """What a command's help says of the URLs it reads, from :data:`SCHEMES`: each prefix with what it names, and
    whether its paths may hold globs."""
    return "; ".join(f"{scheme.prefix} {scheme.names}{' (globs allowed)' if scheme.globs else ''}"
                     for scheme in SCHEMES)


def is_url(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an object by URL (a scheme of :data:`SCHEMES`) rather than a local file."""
    return isinstance(path, str) and path.startswith(PREFIXES)


def _secret_parameter(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith(_SECRET_PREFIXES) or lowered in _SECRET_NAMES or bool(_SECRET_WORDS.search(lowered))


def redact(url: str) -> str:
    """``url``'s name: user info replaced by ``***@``, the value of each secret query parameter by ``***``
    (see the module's docstring); the rest as given, so that a name without a secret is its URL. Idempotent."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    authority, slash, path = rest.partition("/")  # user info first: a password may hold a raw ? or #
    if "@" in authority:
        rest = f"{REDACTED}@{authority.rpartition('@')[2]}{slash}{path}"
    rest, hash_mark, fragment = rest.partition("#")
    rest, question_mark, query = rest.partition("?")
    if query:
        parameters = []
        for parameter in query.split("&"):
            name, equals, value = parameter.partition("=")
            parameters.append(f"{name}={REDACTED}" if equals and value and _secret_parameter(name) else parameter)
        query = "&".join(parameters)
    return f"{scheme}://{rest}{question_mark}{query}{hash_mark}{fragment}"


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (:func:`redact`)."""

    def redacted(match: re.Match) -> str:
        url = match.group()
        line_numbers = _LINE_NUMBERS.search(url)
        kept = line_numbers.start() if line_numbers else len(url.rstrip(_TRAILING))
        return redact(url[:kept]) + url[kept:]

    return _URL_IN_TEXT.sub(redacted, text)


def user_info(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user info, and the ``(user, password)`` it held (None without): what HTTP basic
    authentication sends in a header, never in the address."""
    scheme, separator, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not separator or "@" not in authority:
        return url, None
    info, _, host = authority.rpartition("@")
    user, _, password = info.partition(":")
    return f"{scheme}://{host}{slash}{path}", (unquote(user), unquote(password))


# Full URLs by name: those this process was given.
_full_urls: dict[str, str] = {}


def remember(url: str) -> str:
    """``url``'s name (:func:`redact`), remembering the full URL it stands for in this process."""
    name = redact(url)
    if name != url:
        _full_urls[name] = url  # the latest: two URLs of one name differ in their secrets only (a new signature)
    return name


def full_url(name: str) -> str:
    """The full URL a name stands for: given to this process, else in ``TOKENMILL_URLS``, else the name
    itself where it has nothing redacted.

    Raises:
        TokenmillError: a redacted name that no URL given maps to.
    """
    if name in _full_urls:
        return _full_urls[name]
    try:
        listed = json.loads(os.environ.get(URLS_VARIABLE) or "[]")
    except ValueError:
        raise TokenmillError(f"{URLS_VARIABLE}: not a JSON list of URLs") from None
    for url in listed:
        remember(url)
    if name in _full_urls:
        return _full_urls[name]
    if REDACTED in name:
        raise TokenmillError(f"{name}: a URL with its secrets redacted ({REDACTED}); give the full URL (verify: "
                             f"--inputs URL; the workflow's jobs take it from the config, through {URLS_VARIABLE})")
    return name


def refuse_shared_names(urls: Iterable[str]) -> None:
    """Refuse two different URLs among ``urls`` (files and URLs) that have one name: they differ only in values
    hidden as secrets (``?key=a.jsonl`` and ``?key=b.jsonl``). Records, commands and pins name a URL by its name,
    and a name maps back to one full URL (:func:`full_url`), so one of the two would be read for both.

    Raises:
        TokenmillError: two such URLs, named by their name alone.
    """
    seen: dict[str, str] = {}
    for url in urls:
        if is_url(url) and seen.setdefault(redact(url), url) != url:
            raise TokenmillError(f"{redact(url)}: two different URLs have this name once their secrets are hidden "
                                 f"({REDACTED}), and tokenmill names a URL by it everywhere, so it would read one of "
                                 f"them for both; give them URLs that differ outside their secret parts (user info, "
                                 f"signatures, and parameters named like key, token or sig)")


def urls_variable(urls: Iterable[str]) -> str:
    """The value of ``TOKENMILL_URLS`` for the jobs of a config whose inputs are ``urls`` (files and URLs): its
    URLs that hold a secret, as a JSON list.

    Raises:
        TokenmillError: two URLs of one name (:func:`refuse_shared_names`).
    """
    urls = list(urls)
    refuse_shared_names(urls)
    return json.dumps(sorted({url for url in urls if is_url(url) and redact(url) != url}))
