"""A static-files finder that serves the plotly.js bundled in the plotly package.

Charts must work without a CDN, and copying the 4.6 MB bundle into the repository would let it
drift from the installed plotly version. This finder exposes exactly one file,
``vendor/plotly/plotly.min.js``, from the installed package.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

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
