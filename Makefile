# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint format bench load migrate clean faults probe plotly-bundle

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed; set PYTHON=python3.11")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# uv resolves and installs in parallel (seconds, not minutes), compiling bytecode as pip does;
	@# plain pip if uv cannot be had.
	@if $(PY) -m pip install --quiet uv && $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) -e ".[dev]"; then \
		echo "Installed with uv."; \
	else \
		echo "uv failed; installing with pip (a few minutes)."; \
		$(PY) -m pip install --quiet --upgrade pip && $(PY) -m pip install --quiet -e ".[dev]"; \
	fi
	@touch $(STAMP)

install: $(STAMP)

## make run: install, then (in one process) migrate, load demo data, collect static files, and
## serve the dashboard with a worker (embedded default)
run: $(STAMP)
	DJANGO_DEBUG=$${DJANGO_DEBUG:-true} DJANGO_STATIC_MANIFEST=$${DJANGO_STATIC_MANIFEST:-true} \
		$(PY) manage.py serve --prepare --host $(HOST) --port $(PORT)

## make test: the whole suite in parallel, one pytest-xdist worker per core (TEST_WORKERS=4 sets
## the number, TEST_WORKERS=0 runs in one process), then the tests marked `serial` in one
## process; services are used when their variables are set (see README)
TEST_WORKERS ?= auto
test: $(STAMP)
	@# Exit status 5 is "no test selected": PYTEST_ARGS may select tests of one pass only.
	$(PY) -m pytest -n $(TEST_WORKERS) -m "not serial" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(PY) -m pytest -m serial $(PYTEST_ARGS) || [ $$? -eq 5 ]

## make lint: ruff, then mypy (configured in pyproject.toml)
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

## make bench: speed and accuracy figures, printed as ratios measured in one run
bench: $(STAMP)
	$(PY) -m bench

## make load: 50 users on pages and API for 60 s (gunicorn + PostgreSQL + Redis on loopback)
load: $(STAMP)
	$(PY) -m bench.load

## make probe: a 1,000,000-workload CSV through gunicorn + Celery + PostgreSQL; times pages, delete
probe: $(STAMP)
	$(PY) -m bench.probe

## make faults: worker SIGKILL, PostgreSQL restart, Redis down, media disk full; PASS/FAIL each
faults: $(STAMP)
	$(PY) -m bench.faults

migrate: $(STAMP)
	$(PY) manage.py migrate --noinput

## make plotly-bundle: rebuild static/vendor/plotly/plotly-audit.min.js (the trace types the
## charts draw) from docker/plotly-bundle with Node.js and npm; only needed to add a trace type
plotly-bundle:
	rm -rf var/plotly-bundle && mkdir -p var/plotly-bundle
	cp docker/plotly-bundle/index.js docker/plotly-bundle/build.js docker/plotly-bundle/package.json \
		docker/plotly-bundle/package-lock.json var/plotly-bundle/
	cd var/plotly-bundle && npm ci --ignore-scripts --no-audit --no-fund \
		&& node build.js $(CURDIR)/static/vendor/plotly/plotly-audit.min.js

clean:
	rm -rf var
