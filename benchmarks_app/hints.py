"""The command-line flags that state a run's fields, as options and as the hints that name them.

`benchmark_import` takes `--meta KEY=VALUE`; the gate takes `--meta-baseline KEY=VALUE` and
`--meta-candidate KEY=VALUE`. A run's metric hints name `--meta` (`meta_flag`); a gate sentence
about one side names that side's option (`meta_for_side`), and the pages turn any of them into
the run page's field (`META_FLAGS`, `META_KEY`).
"""

from __future__ import annotations

import re

META_OPTION = "--meta"
SIDES = ("baseline", "candidate")

_OPTION = r"--meta(?:-baseline|-candidate)?"
# One flag's key: "--meta num_gpus=" or "--meta-candidate num_gpus=".
META_KEY = re.compile(_OPTION + r" (\w+)=")
# One or more flags in parentheses: "(--meta-candidate num_gpus=8)".
META_FLAGS = re.compile(r"\(((?:" + _OPTION + r" \w+=[^)\s]*\s*)+)\)")
_RUN_FLAG = re.compile(r"--meta (?=\w+=)")


def meta_option(side: str | None = None) -> str:
    """The option that states run fields: `--meta` on import, `--meta-SIDE` on the gate."""
    if side is None:
        return META_OPTION
    if side not in SIDES:
        raise ValueError(f"side must be one of {', '.join(SIDES)}, got {side!r}")
    return f"{META_OPTION}-{side}"


def meta_flag(key: str, example: str, side: str | None = None) -> str:
    """`--meta KEY=EXAMPLE`, or the gate's `--meta-SIDE KEY=EXAMPLE` for one side."""
    return f"{meta_option(side)} {key}={example}"


def meta_for_side(sentence: str, side: str) -> str:
    """A run's hint as the gate says it of one side: each `--meta KEY=` becomes
    `--meta-SIDE KEY=`."""
    return _RUN_FLAG.sub(meta_option(side) + " ", sentence)
