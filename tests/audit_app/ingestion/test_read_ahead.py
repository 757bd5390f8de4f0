"""Reading ahead on a second thread: same items in the same order, errors where they happened,
context variables carried, and the reader stopped when the caller stops."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import closing

import pytest

from audit_app.ingestion.read_ahead import read_ahead

_NAME: contextvars.ContextVar[str] = contextvars.ContextVar("name", default="unset")


def test_items_come_in_order_whatever_the_depth() -> None:
    for depth in (1, 2, 5):
        assert list(read_ahead(iter(range(20)), depth=depth)) == list(range(20))
    assert list(read_ahead(iter([]))) == []


def test_an_error_comes_after_the_items_before_it() -> None:
    def items() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("line 3: bad")

    got: list[int] = []
    with pytest.raises(ValueError, match="line 3: bad"):
        for item in read_ahead(items()):
            got.append(item)
    assert got == [1, 2]


def test_the_reader_runs_on_another_thread_in_the_callers_context() -> None:
    seen: list[tuple[str, bool]] = []

    def items() -> Iterator[int]:
        seen.append((_NAME.get(), threading.current_thread() is threading.main_thread()))
        yield 1

    token = _NAME.set("upload 7")
    try:
        assert list(read_ahead(items())) == [1]
    finally:
        _NAME.reset(token)
    assert seen == [("upload 7", False)]


def test_closing_early_stops_the_reader_and_closes_its_source() -> None:
    produced: list[int] = []
    closed: list[bool] = []

    def items() -> Iterator[int]:
        try:
            for n in range(1000):
                produced.append(n)
                yield n
        finally:
            closed.append(True)

    with closing(read_ahead(items(), depth=1)) as ahead:
        assert next(ahead) == 0
    # The caller took one item; at most the one waiting and the one being handed over were
    # produced beyond it, and the source was closed after the thread stopped.
    assert len(produced) <= 3
    assert closed == [True]
    assert not any(t.name == "ingest-read-ahead" for t in threading.enumerate())
