"""File names kept within the limits of the columns and filesystems that hold them.

A name is measured in UTF-8 bytes. 255 bytes is the longest file name Linux filesystems accept,
and a name that fits it fits every common filesystem (macOS and Windows count up to 255 UTF-16
units, never more units than UTF-8 bytes), so a name kept whole is also a name the raw file can
be downloaded under. A longer name is cut at the end of its stem, on a character boundary, and
keeps its extension (`.csv`, `.jsonl`, and `.csv.gz` for a compressed file), which importers and
people read the file type from.

Pure: no Django.
"""

from __future__ import annotations

import re

NAME_MAX_BYTES = 255
COMPRESSION_SUFFIXES = frozenset({".gz", ".bz2", ".xz", ".zst", ".zip"})
# An extension is a short run of letters and digits after the last dot; a long dotted tail
# ("report.final version for the board") is part of the stem.
_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def name_extension(name: str) -> str:
    """The extension of ``name``: `.csv`; `.csv.gz` for a compressed file; '' when it has none."""
    last = _SUFFIX.search(name)
    if last is None:
        return ""
    if last.group().lower() in COMPRESSION_SUFFIXES and last.start() > 0:
        inner = _SUFFIX.search(name[: last.start()])
        if inner is not None and inner.start() > 0:
            return inner.group() + last.group()
    return last.group() if last.start() > 0 else ""


def shortened_name(name: str, *, max_bytes: int = NAME_MAX_BYTES) -> str:
    """``name`` if its UTF-8 form fits ``max_bytes``; otherwise its stem cut on a character
    boundary so that stem and extension fit together. Lone surrogates (a command-line path's
    undecodable bytes) become `?`, as no database column or UTF-8 file name can hold them."""
    encoded = name.encode("utf-8", errors="replace")
    name = encoded.decode("utf-8")
    if len(encoded) <= max_bytes:
        return name
    extension = name_extension(name)
    if len(extension) * 2 > max_bytes:  # a tiny budget: the stem comes first
        extension = ""
    stem = name[: len(name) - len(extension)].encode("utf-8")
    kept = stem[: max_bytes - len(extension)].decode("utf-8", errors="ignore")
    return kept + extension
