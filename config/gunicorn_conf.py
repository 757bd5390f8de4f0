"""gunicorn's settings for the web server, the one setup everything runs: the production image,
`manage.py serve` with DEBUG off, and the benches (`gunicorn -c python:config.gunicorn_conf
config.wsgi --bind ...`; `config.processes.web_command` builds that line).

Stock gunicorn: WEB_CONCURRENCY worker processes (default 2, one per core of the machine the
figures in docs/performance.md come from), each with WEB_THREADS threads (gthread, default 4),
so a request waiting on PostgreSQL or hashing a password (hashlib releases the GIL) does not
hold a whole process. Command-line flags override these.
"""

from __future__ import annotations

import os

worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
# An upload of UPLOAD_MAX_BYTES is streamed to disk within one request.
timeout = 120
graceful_timeout = 10
