# Two commands: `make run` and `make test`. Everything else is set up on demand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# mypy cannot follow the editable install's import hook, so it reads the packages through links named as imported.
TYPEROOT := $(VENV)/typecheck

.PHONY: run test test-oldest lint typecheck unit bench bench-env fuzz proto clean system-deps

# setup.py builds the three C modules (collector/sources/_wire.c, collector/pipeline/_gate.c, scorers/_equal.c), in
# place: a change to any reinstalls.
$(STAMP): pyproject.toml setup.py collector/sources/_wire.c collector/pipeline/_gate.c scorers/_equal.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV) || { $(PY) -m pip install -q virtualenv && $(PY) -m virtualenv -q $(VENV); }
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,postgres]'
	mkdir -p $(TYPEROOT)/toolscore
	ln -sfn $(CURDIR)/scorers $(TYPEROOT)/toolscore/scorers
	ln -sfn $(CURDIR)/collector $(TYPEROOT)/toolscore/collector
	ln -sfn $(CURDIR)/proto/toolscore/registry $(TYPEROOT)/toolscore/registry
	ln -sfn $(CURDIR)/proto/toolscore/__init__.py $(TYPEROOT)/toolscore/__init__.py
	ln -sfn $(CURDIR)/proto/toolscore/export.py $(TYPEROOT)/toolscore/export.py
	touch $@

run: $(STAMP)
	$(BIN)/toolscore serve

lint: $(STAMP)
	$(BIN)/ruff check scorers collector proto tests
	$(BIN)/ruff format --check scorers collector proto tests

typecheck: $(STAMP)
	MYPYPATH=$(TYPEROOT) $(BIN)/mypy -m toolscore -m toolscore.export -p toolscore.scorers -p toolscore.collector

# Servers the tests start for real (PostgreSQL, ...): each .ci/install-* script installs one when missing.
system-deps:
	@for script in .ci/install-*; do if [ -x "$$script" ]; then "$$script"; fi; done

unit: $(STAMP) system-deps
	$(BIN)/pytest -q

test: lint typecheck unit

# The suite again on the oldest versions pyproject.toml allows: every direct dependency (and test tool) at its
# lower bound, or the lowest the other bounds let it have (uv's lowest-direct resolution), in a venv of its own.
# docs/testing.md says which bounds were raised for it and why. `.ci/run` runs it after `make test`.
# The venv is built afresh whenever pyproject.toml changes: an install into the old one would keep versions that
# still satisfy the new bounds instead of going down to them.
OLDEST_VENV := .venv-oldest
OLDEST_STAMP := $(OLDEST_VENV)/.installed

$(OLDEST_STAMP): pyproject.toml setup.py
	rm -rf $(OLDEST_VENV)
	$(PY) -m venv $(OLDEST_VENV) || { $(PY) -m pip install -q virtualenv && $(PY) -m virtualenv -q $(OLDEST_VENV); }
	$(OLDEST_VENV)/bin/python -m pip install -q --upgrade pip uv
	$(OLDEST_VENV)/bin/uv pip install -q --python $(OLDEST_VENV)/bin/python --resolution lowest-direct -e '.[test,postgres]'
	touch $@

# CI runs the unit part there (the whole suite twice, latest and oldest, would take CI past its time budget);
# `make test-oldest OLDEST_PYTEST_ARGS=` runs the whole suite on the oldest versions.
OLDEST_PYTEST_ARGS ?= -m "not integration"

# TOOLSCORE_PURE_PYTHON: there the suite runs the pure-Python span decoder, which the compiled one answers to.
test-oldest: $(OLDEST_STAMP) system-deps
	TOOLSCORE_PURE_PYTHON=1 $(OLDEST_VENV)/bin/pytest -q $(OLDEST_PYTEST_ARGS)

# Regenerates the gRPC stubs next to the .proto files; tests/test_proto_sync.py fails when they are stale.
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -I proto --python_out=proto --pyi_out=proto --grpc_python_out=proto \
		proto/toolscore/registry/v1/registry.proto

# The Python peers (deepeval, ragas, agentevals) live in their own environment, pinned, apart from toolscore's.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed
BENCH_REQS := tests/bench/peers/requirements.txt
BENCH_PINS := tests/bench/peers/constraints.txt

$(BENCH_STAMP): $(BENCH_REQS) $(BENCH_PINS)
	test -x $(BENCH_VENV)/bin/python || $(PY) -m venv $(BENCH_VENV) || { $(PY) -m pip install -q virtualenv && $(PY) -m virtualenv -q $(BENCH_VENV); }
	$(BENCH_VENV)/bin/python -m pip install -q -r $(BENCH_REQS) -c $(BENCH_PINS)
	touch $@

bench-env: $(BENCH_STAMP)

bench: $(STAMP) $(BENCH_STAMP)
	$(BIN)/python -m tests.bench

# Coverage-guided fuzzing of the readers of untrusted bytes (tests/fuzz/targets.py), FUZZ_SECONDS per target;
# not part of `make test` (which runs the targets on their seeds: tests/test_fuzz_targets.py).
FUZZ_SECONDS ?= 60

fuzz: $(STAMP)
	$(BIN)/python -c 'import atheris' 2>/dev/null || $(BIN)/python -m pip install -q -e '.[fuzz]'
	$(BIN)/python -m tests.fuzz --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) $(OLDEST_VENV) .venv-bench build *.egg-info .mypy_cache .pytest_cache .ruff_cache
