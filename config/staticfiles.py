"""The compressed manifest storage `make run` uses.

plotly.js is served from the repository (`static/vendor/plotly/plotly-audit.min.js`, a
partial bundle of the traces the charts draw; its provenance is beside it), never from a CDN.
"""

from __future__ import annotations

from typing import Any

import brotli
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

PLOTLY_STATIC_PATH = "vendor/plotly/plotly-audit.min.js"


# Brotli's top quality (11) takes seconds for plotly.js alone on a 2-core machine and most of a
# minute for every static file; quality 9 takes a fraction of a second at about 10 % more bytes
# (plotly.js: 0.37 MB; gzip 0.41 MB). Production collects once at build time at 11.
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
