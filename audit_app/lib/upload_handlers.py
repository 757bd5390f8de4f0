"""Upload handlers: enforce the size limit while the body streams in, and keep file names.

Django would otherwise write the whole body to a temporary file before any view could look at
its size. `SizeLimitUploadHandler` counts bytes as they arrive and stops the upload past
UPLOAD_MAX_BYTES; the view then answers with a clear error (see `upload_too_large`).
`NamedTemporaryFileUploadHandler` then streams the file to a temporary file with the client's
name shortened by `audit_app.lib.filenames.shortened_name`.
"""

from __future__ import annotations

from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.core.files.uploadhandler import (
    FileUploadHandler,
    StopUpload,
    TemporaryFileUploadHandler,
)
from django.http import HttpRequest

from audit_app.lib.filenames import shortened_name

TOO_LARGE_ATTRIBUTE = "_upload_too_large"
# Multipart framing and the other form fields ride along with the file.
_FORM_OVERHEAD_BYTES = 1024 * 1024


class SizeLimitUploadHandler(FileUploadHandler):
    def handle_raw_input(
        self,
        input_data: IO[bytes],
        META: dict[str, str],
        content_length: int,
        boundary: str,
        encoding: str | None = None,
    ) -> None:
        self.received = 0
        self.limit = settings.UPLOAD_MAX_BYTES
        # Django calls this outside the parser's StopUpload handling, so only note it here; the
        # first file chunk stops the upload.
        self.refuse = bool(content_length and content_length > self.limit + _FORM_OVERHEAD_BYTES)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.refuse or self.received > self.limit:
            self._stop()
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None

    def _stop(self) -> None:
        if self.request is not None:
            setattr(self.request, TOO_LARGE_ATTRIBUTE, True)
        # Keep reading (and discarding) the body so the client gets our answer, not a reset.
        raise StopUpload(connection_reset=False)


class NamedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Django's temporary-file handler, keeping the client's file name up to 255 bytes with its
    whole extension (`shortened_name`).

    Django's own handler cuts a name over 255 characters keeping only its last suffix (the
    `.gz` of `.csv.gz`), and names its temporary file after that suffix, which fails with "File
    name too long" (a 500) when a name ends in a long dotted tail; the temporary file here is
    named without it.
    """

    def new_file(self, field_name: str, file_name: str, *args: Any, **kwargs: Any) -> None:
        FileUploadHandler.new_file(self, field_name, shortened_name(file_name), *args, **kwargs)
        self.file = TemporaryUploadedFile(
            "upload", self.content_type, 0, self.charset, self.content_type_extra
        )
        self.file.name = self.file_name


def upload_too_large(request: HttpRequest) -> bool:
    return bool(getattr(request, TOO_LARGE_ATTRIBUTE, False))
