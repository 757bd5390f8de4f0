"""docs/performance.md and docs/reliability.md: one section per command that measures something.

Each command (the benchmarks, the load test, the probe, the fault scripts, the hostile-input
test) rewrites only its own section, between markers, so running one command never erases
another's figures. Speed sections go to docs/performance.md, fault and hostile-input sections to
docs/reliability.md; a page keeps its sections in the order below and its text above the first.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PERFORMANCE = REPO / "docs" / "performance.md"
RELIABILITY = REPO / "docs" / "reliability.md"

# Each page's sections, in page order.
PAGES: dict[Path, tuple[str, ...]] = {
    PERFORMANCE: ("targets", "scale", "fanout", "load", "probe", "firstpage", "firststart"),
    RELIABILITY: ("faults", "hostile"),
}


def page_of(name: str) -> Path:
    """The page section ``name`` is written to."""
    return next((page for page, names in PAGES.items() if name in names), RELIABILITY)


_MARK = re.compile(
    r"<!-- section:(?P<name>[a-z_]+) -->\n(?P<body>.*?)<!-- /section:(?P=name) -->\n", re.S
)


def read_sections(text: str) -> dict[str, str]:
    return {m["name"]: m["body"] for m in _MARK.finditer(text)}


def write_section(name: str, body: str, *, path: Path | None = None) -> Path:
    """Replace (or add) section ``name`` of its page (or ``path``) with ``body`` (markdown, with
    its title), keeping the page's text above its first section. Returns the page written."""
    path = path or page_of(name)
    text = path.read_text(encoding="utf-8") if path.exists() else f"# {path.stem.title()}\n"
    first = text.find("<!-- section:")
    header = text if first < 0 else text[:first]
    sections = read_sections(text)
    sections[name] = body.rstrip("\n") + "\n"
    known = PAGES.get(path, ())
    order = [s for s in known if s in sections] + sorted(set(sections) - set(known))
    parts = [header.rstrip("\n") + "\n"]
    for section in order:
        body_text = sections[section]
        parts.append(f"<!-- section:{section} -->\n{body_text}<!-- /section:{section} -->\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


SPIN = "x = 0\nfor i in range(20_000_000):\n    x += i\n"


def machine_scaling() -> float:
    """How much faster two processes of pure CPU work finish than one, right now (2.0 on two
    idle cores): the ceiling any two-process figure can reach on this machine at this moment.
    On a shared virtual machine it moves with what the host's other guests are doing."""

    def spin(count: int) -> float:
        started = time.perf_counter()
        processes = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
        for process in processes:
            process.wait()
        return time.perf_counter() - started

    one = min(spin(1) for _ in range(2))
    two = min(spin(2) for _ in range(2))
    return 2 * one / two
