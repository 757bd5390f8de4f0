"""A static-files finder that serves the plotly.js bundled in the plotly package, and the
compressed manifest storage `make run` uses.

Charts must work without a CDN, and copying the 4.6 MB bundle into the repository would let it
drift from the installed plotly version. This finder exposes exactly one file,
``vendor/plotly/plotly.min.js``, from the installed package.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli
import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"
PLOTLY_FILE = "plotly.min.js"
PREFIX = "vendor/plotly"
STATIC_PATH = f"{PREFIX}/{PLOTLY_FILE}"


class PlotlyStorage(FileSystemStorage):
    # collectstatic copies a finder's files under its storage's `prefix`.
    prefix = PREFIX


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = PlotlyStorage(location=str(PLOTLY_DIR))

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    # No match is [], as in Django's own finders; the stubs say None for `find_all=False`.
    def find(  # type: ignore[override]
        self, path: str, find_all: bool = False, **kwargs: Any
    ) -> str | list[str]:
        if path != STATIC_PATH:
            return []
        found = str(PLOTLY_DIR / PLOTLY_FILE)
        return [found] if find_all or kwargs.get("all") else found

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        yield PLOTLY_FILE, self.storage


# Brotli's top quality (11) takes ~11 s for plotly.js alone on a 2-core machine and ~45 s for
# every static file; quality 9 takes under a second for plotly.js at 11 % more bytes
# (1.23 MB against 1.11 MB; gzip is 1.47 MB). Production collects once at build time at 11.
QUICK_BROTLI_QUALITY = 9


class QuickCompressor(Compressor):
    @staticmethod
    def compress_brotli(data: bytes) -> bytes:
        compressed: bytes = brotli.compress(data, quality=QUICK_BROTLI_QUALITY)
        return compressed


class QuickCompressedManifestStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's compressed manifest storage for `make run`: a faster brotli, and hashed
    URLs even with DEBUG on (Django's manifest storage gives plain names under DEBUG, which
    WhiteNoise then serves with max-age=0)."""

    def create_compressor(self, **kwargs: Any) -> Compressor:
        return QuickCompressor(**kwargs)

    def url(self, name: str | None, force: bool = False) -> str:
        return super().url(name, force=True)
