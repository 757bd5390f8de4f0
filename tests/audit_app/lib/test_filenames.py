"""`audit_app.lib.filenames`: names kept whole up to 255 UTF-8 bytes, longer ones cut keeping their
extension."""

from __future__ import annotations

import pytest

from audit_app.lib.filenames import name_extension, shortened_name


@pytest.mark.parametrize(
    ("name", "extension"),
    [
        ("spend.csv", ".csv"),
        ("spend.JSONL", ".JSONL"),
        ("bill.csv.gz", ".csv.gz"),
        ("bill.2024-05.csv", ".csv"),
        ("archive.gz", ".gz"),
        ("report.final version for the board", ""),
        ("no_extension", ""),
        (".csv", ""),
        (".csv.gz", ".gz"),
        ("a." + "x" * 11, ""),
    ],
)
def test_name_extension(name: str, extension: str) -> None:
    assert name_extension(name) == extension


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("x" * 251 + ".csv", "x" * 251 + ".csv"),  # 255 bytes: kept whole
        ("x" * 252 + ".csv", "x" * 251 + ".csv"),  # 256 bytes
        ("x" * 296 + ".csv", "x" * 251 + ".csv"),  # 300 bytes
        ("x" * 993 + ".csv.gz", "x" * 248 + ".csv.gz"),  # 1000 bytes
        ("x" * 994 + ".jsonl", "x" * 249 + ".jsonl"),
        ("€" * 85, "€" * 85),  # 255 bytes of three-byte characters
        ("€" * 86, "€" * 85),
        ("€" * 99 + ".jsonl", "€" * 83 + ".jsonl"),  # 303 bytes -> 255
        ("é" * 150 + ".csv", "é" * 125 + ".csv"),  # the cut falls inside a character: 254
        ("x." + "a" * 300, "x." + "a" * 253),  # a long dotted tail is no extension
        ("bad\udcffbyte.csv", "bad?byte.csv"),  # an undecodable byte of a command-line path
    ],
)
def test_shortened_name(name: str, expected: str) -> None:
    shortened = shortened_name(name)
    assert shortened == expected
    assert len(shortened.encode()) <= 255


def test_shortened_name_to_a_smaller_limit() -> None:
    assert shortened_name("x" * 300 + ".json", max_bytes=200) == "x" * 195 + ".json"
    assert shortened_name("report.csv", max_bytes=5) == "repor"
