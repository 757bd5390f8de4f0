"""docs/reliability.md: one page, one section per command that measures something.

Each command (the scale and ingest fan-out benchmark, the load test, the fault scripts, the
hostile-input test) rewrites only its own section, between markers, so running one command never
erases another's figures. Sections appear in SECTIONS order; unknown names go last.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "reliability.md"

SECTIONS = ("scale", "fanout", "load", "probe", "faults", "hostile")

HEADER = """# Reliability

Every figure on this page is written by a command in this repository; each section names its
command and is rewritten whenever that command runs, so do not edit the page by hand.
"""

_MARK = re.compile(
    r"<!-- section:(?P<name>[a-z_]+) -->\n(?P<body>.*?)<!-- /section:(?P=name) -->\n", re.S
)


def read_sections(text: str) -> dict[str, str]:
    return {m["name"]: m["body"] for m in _MARK.finditer(text)}


def write_section(name: str, body: str, *, path: Path = DOC) -> None:
    """Replace (or add) section ``name`` of the page with ``body`` (markdown, with its title)."""
    sections = read_sections(path.read_text(encoding="utf-8")) if path.exists() else {}
    sections[name] = body.rstrip("\n") + "\n"
    order = [s for s in SECTIONS if s in sections] + sorted(set(sections) - set(SECTIONS))
    parts = [HEADER]
    for section in order:
        body_text = sections[section]
        parts.append(f"<!-- section:{section} -->\n{body_text}<!-- /section:{section} -->\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")


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
