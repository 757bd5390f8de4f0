#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import gc
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    finally:
        # The command is done and the process ends: nothing it built needs collecting. Frozen,
        # its objects are skipped by the collections the interpreter runs as it exits, which
        # walked every one of them (pandas, pyarrow and Django loaded: ~0.1 s of each
        # command's exit here). Exit handlers (logging, temporary files) still run.
        gc.freeze()


if __name__ == "__main__":
    main()
