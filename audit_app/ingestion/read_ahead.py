"""Reading ahead: the next chunk of a file is parsed on a second thread while the caller
aggregates the current one.

Parsing (pyarrow's CSV reader, dictionary encoding, numpy) and aggregating (pandas' group-by,
numpy) spend much of their time in C code that releases the GIL, so on two cores the two
overlap. At most `depth` chunks wait between the two, so memory stays bounded by the chunk
size, not the file size. The reader runs in a copy of the caller's context (context variables
such as `litellm_columnar.memos_shared_under` hold there), must not use the database (a thread
has its own connection, outside the caller's transaction), and an exception it raises is raised
to the caller at the chunk where it happened, every chunk before it having been handed over.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Generator, Iterator
from typing import TypeVar

T = TypeVar("T")

_ITEM, _DONE, _ERROR = "item", "done", "error"
_PUT_WAIT_SECONDS = 0.1


def read_ahead(chunks: Iterator[T], *, depth: int = 1) -> Generator[T, None, None]:
    """Yield what `chunks` yields, producing it on a second thread up to `depth` ahead.

    Close the returned generator (or exhaust it) before closing what `chunks` reads: closing
    stops and joins the reading thread, then closes `chunks`.
    """
    waiting: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def hand_over(entry: tuple[str, object]) -> bool:
        while not stop.is_set():
            try:
                waiting.put(entry, timeout=_PUT_WAIT_SECONDS)
                return True
            except queue.Full:
                continue
        return False  # the caller stopped reading

    def produce() -> None:
        try:
            for chunk in chunks:
                if not hand_over((_ITEM, chunk)):
                    return
        except BaseException as exc:  # raised to the caller, in order
            hand_over((_ERROR, exc))
            return
        hand_over((_DONE, None))

    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(produce,), name="ingest-read-ahead", daemon=True
    )
    thread.start()
    try:
        while True:
            kind, value = waiting.get()
            if kind == _DONE:
                return
            if kind == _ERROR:
                assert isinstance(value, BaseException)
                raise value
            yield value  # type: ignore[misc]  # an _ITEM entry holds a T
    finally:
        stop.set()
        thread.join()
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
