"""What a billing source holds, read the same way for each kind: a folder's files, one HTTP(S)
URL, an S3-compatible bucket's keys under a prefix (`audit_app.ingestion.sources` polls them).

Its rules in full: `docs/architecture.md`, section "What a billing source holds".
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Protocol, cast
from urllib.parse import unquote, urlsplit

from audit_app.lib import outbound
from audit_app.lib.outbound import OutboundFailed, OutboundPolicy, OutboundRefused, OutboundResponse

S3_TIMEOUT_SECONDS = 30
S3_MAX_ATTEMPTS = 2  # the first attempt and one retry
S3_PAGE_SIZE = 1000  # keys per list_objects_v2 page (S3's own maximum)
USER_AGENT = "inference-spend-audit-billing-sources"
# Characters that make an S3 prefix a pattern ("exports/*.csv").
GLOB_CHARACTERS = "*?["
# What of a store's error code an error message keeps.
_ERROR_CODE = re.compile(r"[^A-Za-z0-9._-]")

Fingerprint = Mapping[str, str | int]


class SourceUnavailable(Exception):
    """The source (or one object) could not be read now; the message says why, as a clause.
    The poll records it and tries again later."""


class ObjectRefused(Exception):
    """This object, as it stands, is not taken (too large, a link out of the allowed folders);
    the message says why. It is tried again only once it changes."""


@dataclass(frozen=True, kw_only=True)
class SourceObject:
    name: str  # path under the folder, URL, or key
    file_name: str  # what the upload is called
    size: int | None  # bytes, when the listing says
    fingerprint: Fingerprint = field(default_factory=dict)


class SourceReader(Protocol):
    """Lists a source's objects and opens one; `close` releases what listing held open."""

    def list_objects(self, seen: Mapping[str, Mapping[str, Any]]) -> Iterator[SourceObject]: ...

    def open_object(self, obj: SourceObject) -> AbstractContextManager[BinaryIO]: ...

    def close(self) -> None: ...


def fingerprint_unchanged(fingerprint: Fingerprint, known: Mapping[str, Any] | None) -> bool:
    """True when every part of a (non-empty) cheap fingerprint is what was remembered."""
    if not fingerprint or not known:
        return False
    return all(known.get(key) == value for key, value in fingerprint.items())


# --- Folders -------------------------------------------------------------------------------


def _is_within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def folder_in_roots(location: str, roots: Sequence[Path]) -> Path:
    """The folder ``location`` names, symlinks resolved, if it lies under one of ``roots``
    (themselves resolved); else ValueError naming the allowed roots."""
    path = Path(location)
    if not path.is_absolute():
        raise ValueError(f"{location!r} is not an absolute path; give the folder's full path.")
    resolved = path.resolve()
    allowed = [Path(root).resolve() for root in roots]
    if not any(_is_within(resolved, root) for root in allowed):
        shown = ", ".join(str(root) for root in allowed) or "none"
        raise ValueError(
            f"{location} is not under a folder billing sources may read ({shown}); an operator "
            "allows others with BILLING_SOURCE_ROOTS."
        )
    return resolved


def check_pattern(pattern: str) -> None:
    """A folder source's file pattern is relative and stays inside the folder."""
    if pattern.startswith(("/", "\\")) or ".." in PurePosixPath(pattern).parts:
        raise ValueError(
            f"{pattern!r} must name files inside the folder (e.g. *.csv or **/*.csv), "
            "without a leading / or .. parts."
        )


class FolderReader:
    """The regular files under ``location`` matching ``pattern`` (a glob, ``**`` for
    subfolders); names starting with a dot (partial downloads, editors' files) are skipped."""

    def __init__(self, *, location: str, pattern: str, roots: Sequence[Path]) -> None:
        self.location = location
        self.pattern = pattern or "*"
        self.roots = [Path(root).resolve() for root in roots]
        self.folder: Path | None = None

    def list_objects(self, seen: Mapping[str, Mapping[str, Any]]) -> Iterator[SourceObject]:
        try:
            folder = folder_in_roots(self.location, self.roots)
            check_pattern(self.pattern)
        except ValueError as exc:
            raise SourceUnavailable(str(exc).rstrip(".")) from None
        if not folder.is_dir():
            raise SourceUnavailable("the folder does not exist (or is not a folder)")
        self.folder = folder
        for path in sorted(folder.glob(self.pattern)):
            relative = path.relative_to(folder)
            if any(part.startswith(".") for part in relative.parts) or not path.is_file():
                continue
            stat = path.stat()
            yield SourceObject(
                name=relative.as_posix(),
                file_name=path.name,
                size=stat.st_size,
                fingerprint={"size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
            )

    def open_object(self, obj: SourceObject) -> AbstractContextManager[BinaryIO]:
        assert self.folder is not None, "list the folder first"
        resolved = (self.folder / obj.name).resolve()
        if not any(_is_within(resolved, root) for root in self.roots):
            raise ObjectRefused(
                f"it links to {resolved}, outside the folders billing sources may read"
            )
        return open(resolved, "rb")  # noqa: SIM115 - the caller's `with` closes it

    def close(self) -> None:
        return None


# --- HTTP(S) -------------------------------------------------------------------------------


def url_file_name(url: str) -> str:
    """The last part of the URL's path, or the host when the path names no file."""
    parts = urlsplit(url)
    name = unquote(PurePosixPath(parts.path).name)
    return name or parts.hostname or "export"


class HttpReader:
    """One file at an http(s) URL, asked for with a conditional GET through the outbound client
    (`audit_app.lib.outbound`: public addresses only, one deadline, a size cap): the ETag and
    Last-Modified remembered from the last read go back as If-None-Match and
    If-Modified-Since, and 304 Not Modified means unchanged. A server that sends neither header
    has its body hashed instead (the service compares the sha256)."""

    def __init__(self, *, url: str, policy: OutboundPolicy) -> None:
        self.url = url
        self.policy = policy
        self._response: OutboundResponse | None = None

    def _headers(self, known: Mapping[str, Any]) -> dict[str, str]:
        headers = {"User-Agent": USER_AGENT}
        if known.get("etag"):
            headers["If-None-Match"] = str(known["etag"])
        if known.get("last_modified"):
            headers["If-Modified-Since"] = str(known["last_modified"])
        return headers

    def list_objects(self, seen: Mapping[str, Mapping[str, Any]]) -> Iterator[SourceObject]:
        known = seen.get(self.url) or {}
        name = url_file_name(self.url)
        response = outbound.request(
            "GET", self.url, policy=self.policy, headers=self._headers(known)
        )
        if response.status == 304:
            response.close()
            unchanged = {k: known[k] for k in ("etag", "last_modified") if known.get(k)}
            yield SourceObject(name=self.url, file_name=name, size=None, fingerprint=unchanged)
            return
        if not 200 <= response.status < 300:
            response.close()
            raise SourceUnavailable(f"the server answered HTTP {response.status}")
        self._response = response
        headers = {key.lower(): value for key, value in response.headers.items()}
        fingerprint = {
            key: value
            for key, value in (
                ("etag", headers.get("etag")),
                ("last_modified", headers.get("last-modified")),
            )
            if value
        }
        length = (headers.get("content-length") or "").strip()
        size = int(length) if length.isdigit() else None
        yield SourceObject(name=self.url, file_name=name, size=size, fingerprint=fingerprint)

    def open_object(self, obj: SourceObject) -> AbstractContextManager[BinaryIO]:
        if self._response is None:
            raise SourceUnavailable("the body was not fetched")
        response, self._response = self._response, None
        return cast(AbstractContextManager[BinaryIO], closing(response))

    def close(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None


# --- S3 and S3-compatible stores -----------------------------------------------------------


def s3_endpoint_check(endpoint_url: str, policy: OutboundPolicy) -> None:
    """Refuse (SourceUnavailable) an endpoint whose host is not one outbound requests may
    reach; its host is resolved and every address checked, as for a URL source."""
    try:
        outbound.check_url(endpoint_url, policy)
    except OutboundRefused as exc:
        raise SourceUnavailable(f"the endpoint {endpoint_url} is refused: {exc}") from None


def s3_client(
    *,
    endpoint_url: str = "",
    region: str = "",
    access_key_id: str = "",
    secret_key: str = "",
    ambient_credentials: bool = False,
) -> Any:
    """A boto3 S3 client with timeouts and few retries. Without keys: at AWS itself, boto3's
    own credential chain (environment, profile, instance role); at a custom endpoint, unsigned
    requests, unless ``ambient_credentials``."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    unsigned = bool(endpoint_url) and not access_key_id and not ambient_credentials
    kwargs: dict[str, Any] = {
        "config": Config(
            connect_timeout=S3_TIMEOUT_SECONDS,
            read_timeout=S3_TIMEOUT_SECONDS,
            retries={"total_max_attempts": S3_MAX_ATTEMPTS, "mode": "standard"},
            user_agent_extra=USER_AGENT,
            **({"signature_version": UNSIGNED} if unsigned else {}),
        )
    }
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    if region:
        kwargs["region_name"] = region
    if access_key_id:
        kwargs["aws_access_key_id"] = access_key_id
        kwargs["aws_secret_access_key"] = secret_key
    return boto3.client("s3", **kwargs)


def split_key_pattern(prefix: str) -> tuple[str, str]:
    """An S3 prefix may end in a pattern ("exports/*.csv"): the part before the first wildcard
    is listed, and each key must match the whole pattern. Without a wildcard: (prefix, "")."""
    cut = min((i for i, ch in enumerate(prefix) if ch in GLOB_CHARACTERS), default=-1)
    if cut < 0:
        return prefix, ""
    return prefix[:cut], prefix


class S3Reader:
    """The keys of ``bucket`` under ``prefix``, listed page by page (list_objects_v2); "folder"
    keys ending in "/" are skipped."""

    def __init__(self, *, bucket: str, prefix: str, client: Any) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.client = client

    def list_objects(self, seen: Mapping[str, Mapping[str, Any]]) -> Iterator[SourceObject]:
        list_prefix, pattern = split_key_pattern(self.prefix)
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=self.bucket, Prefix=list_prefix, PaginationConfig={"PageSize": S3_PAGE_SIZE}
        )
        for page in pages:
            for item in page.get("Contents", []):
                key = str(item["Key"])
                if key.endswith("/") or (pattern and not fnmatch.fnmatchcase(key, pattern)):
                    continue
                size = int(item.get("Size", 0))
                yield SourceObject(
                    name=key,
                    file_name=PurePosixPath(key).name,
                    size=size,
                    fingerprint={"etag": str(item.get("ETag", "")), "size": size},
                )

    def open_object(self, obj: SourceObject) -> AbstractContextManager[BinaryIO]:
        body = self.client.get_object(Bucket=self.bucket, Key=obj.name)["Body"]
        return closing(body)

    def close(self) -> None:
        return None


# --- Why it failed -------------------------------------------------------------------------


def _boto_cause(exc: BaseException) -> str | None:
    from botocore import exceptions as boto

    if isinstance(exc, boto.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "")) or "an error"
        if code in ("NoSuchBucket", "404"):
            return f"the bucket does not exist ({code})"
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return f"access was refused ({code}): check the keys and their permissions"
        return f"the store answered {_ERROR_CODE.sub('', code)[:64] or 'an error'}"
    if isinstance(exc, boto.NoCredentialsError):
        return (
            "no credentials were found: give the source access keys, or configure boto3's "
            "credential chain (environment, profile or instance role)"
        )
    if isinstance(exc, boto.ConnectTimeoutError | boto.ReadTimeoutError):
        return f"the store did not answer within {S3_TIMEOUT_SECONDS} s"
    if isinstance(exc, boto.EndpointConnectionError):
        return f"the store could not be reached ({exc})"
    if isinstance(exc, boto.BotoCoreError):
        return str(exc).rstrip(".")
    return None


def cause_of(exc: BaseException) -> str:
    """Why a listing or a read failed, as a clause to follow "could not read X: "."""
    if isinstance(exc, SourceUnavailable | ObjectRefused):
        return str(exc)
    if isinstance(exc, OutboundRefused | OutboundFailed):
        return str(exc)
    boto = _boto_cause(exc)
    if boto is not None:
        return boto
    if isinstance(exc, OSError):
        return f"it could not be read ({exc.strerror or exc})"
    return f"{type(exc).__name__}: {exc}".rstrip(": ")
