"""Reading the body of a request pushed to a live receiver, within a size limit.

Live receivers (the LiteLLM callback, OTLP) read the raw body themselves: `read_push_body` reads
it from `request.stream` in pieces, never `request.body`, so a body over the limit is refused
(413) as soon as its Content-Length says so or the bytes read pass the limit, before it is held
in memory. A gzip (or deflate) `Content-Encoding` is undone, and the limit holds for the
decompressed bytes too, so a small bomb cannot expand past it. Another encoding is 415.
"""

from __future__ import annotations

import zlib

from rest_framework import exceptions
from rest_framework.request import Request

CHUNK_BYTES = 64 * 1024
GZIP_ENCODINGS = frozenset({"gzip", "x-gzip"})
DEFLATE_ENCODINGS = frozenset({"deflate"})
IDENTITY_ENCODINGS = frozenset({"", "identity"})
BODY_FIELD = "body"


class LengthRequired(exceptions.APIException):
    """411: a chunked body without Content-Length, which Django's request stream reads as empty;
    refused rather than taken for an empty post."""

    status_code = 411
    default_detail = "A chunked body without Content-Length cannot be read: send Content-Length."
    default_code = "length_required"


class PayloadTooLarge(exceptions.APIException):
    """413: the body (or what it decompresses to) is over the receiver's limit."""

    status_code = 413
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def too_large(limit: int, *, decompressed: bool = False) -> PayloadTooLarge:
    what = "decompresses to more than" if decompressed else "is over"
    return PayloadTooLarge(
        f"The request body {what} the limit of {limit:,} bytes (LIVE_MAX_REQUEST_BYTES); "
        "send smaller batches."
    )


def declared_length(request: Request) -> int:
    """The Content-Length the client sent; 0 when absent or unreadable (as Django reads it)."""
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def read_push_body(request: Request, *, limit: int) -> bytes:
    """The body as sent, decompressed per Content-Encoding; 413 past `limit` bytes (sent or
    decompressed), 415 for an encoding other than gzip, deflate or identity, 400 for a body
    that is not what its encoding says, 411 for a chunked body without Content-Length."""
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding not in GZIP_ENCODINGS | DEFLATE_ENCODINGS | IDENTITY_ENCODINGS:
        raise exceptions.UnsupportedMediaType(
            encoding,
            detail=(
                f"Content-Encoding {encoding!r} is not supported: send the body as is, gzip or "
                "deflate."
            ),
        )
    if (
        not request.META.get("CONTENT_LENGTH")
        and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    ):
        raise LengthRequired()
    if declared_length(request) > limit:
        raise too_large(limit)
    raw = _read_limited(request, limit=limit)
    if encoding in GZIP_ENCODINGS:
        return _decompressed(raw, limit=limit, wbits=zlib.MAX_WBITS | 16, name="gzip")
    if encoding in DEFLATE_ENCODINGS:
        return _decompressed(raw, limit=limit, wbits=zlib.MAX_WBITS, name="deflate")
    return raw


def _read_limited(request: Request, *, limit: int) -> bytes:
    stream = request.stream  # None when the request has no body
    if stream is None:
        return b""
    pieces: list[bytes] = []
    size = 0
    while True:
        piece = stream.read(CHUNK_BYTES)
        if not piece:
            return b"".join(pieces)
        size += len(piece)
        if size > limit:
            raise too_large(limit)
        pieces.append(piece)


def _decompressed(raw: bytes, *, limit: int, wbits: int, name: str) -> bytes:
    """`raw` decompressed, member after member (gzip allows several), at most `limit` bytes."""
    out: list[bytes] = []
    size = 0
    rest = raw
    while rest:
        decompressor = zlib.decompressobj(wbits=wbits)
        try:
            piece = decompressor.decompress(rest, limit - size + 1)
        except zlib.error as error:
            raise exceptions.ValidationError(
                {BODY_FIELD: [f"The body is not valid {name} data ({error})."]}
            ) from error
        size += len(piece)
        if size > limit or decompressor.unconsumed_tail:
            raise too_large(limit, decompressed=True)
        if not decompressor.eof:
            raise exceptions.ValidationError(
                {BODY_FIELD: [f"The {name} body is cut short: it ends before its data does."]}
            )
        out.append(piece)
        rest = decompressor.unused_data
    return b"".join(out)
