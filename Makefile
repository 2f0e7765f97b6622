# Fresh machine: `make run` (set up + start the gateway), `make test` (set up + pass the tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench docs venv clean
# whole-engine scenarios run again with only storage.url changed (PostgreSQL, SPEC D1): on the pgvector
# bundle (HNSW) and on Debian's PostgreSQL 15 without pgvector (memory vectors in a plain column, exact top-k)
PG_SCENARIOS := tests/sessions/test_transcripts.py tests/sessions/test_search.py tests/sessions/test_history.py tests/sessions/test_visibility.py \
	tests/hooks/test_session_memory_hook.py tests/security/test_security_routing.py tests/recall/test_recall.py tests/memory/test_memory_index.py \
	tests/memory/test_memory_files.py tests/memory/test_memory_freshness.py
# ... and through clawkeep.Client against a real gateway process (the `engine` fixture's calls; issue 31)
CLIENT_SCENARIOS := tests/sessions/test_search.py tests/sessions/test_history.py tests/sessions/test_visibility.py tests/sessions/test_transcripts.py \
	tests/engine/test_bad_input.py tests/security/test_security_routing.py

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# the first line printed names the home (CLAWKEEP_HOME, default ~/.clawkeep): where everything is written
run: $(STAMP)
	@$(BIN)/clawkeep status
	@$(BIN)/clawkeep gateway

# The UI tests drive Debian's Chromium (never a downloaded browser); a CJK font for readable screenshots.
/usr/bin/chromium:
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-wqy-microhei

test: $(STAMP) /usr/bin/chromium
	bash .ci/postgres.sh install   # Debian's PostgreSQL for the postgres tests (they start and stop it themselves)
	bash .ci/openclaw.sh install >/dev/null   # Node 24 + OpenClaw from npm for the plugin tests (cached outside the clone)
	$(BIN)/ruff check src tests bench   # lint: the project's rules (pyproject [tool.ruff]), no exceptions but the ones it names
	$(BIN)/lint-imports   # the layering contract (.importlinter): no upward import, no cycle
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet   # the docs site: a broken link or a stale generated reference fails
	$(BIN)/python -m pytest -q
	$(BIN)/python -m pytest -q --engine-backend postgres $(PG_SCENARIOS)
	$(BIN)/python -m pytest -q --engine-backend postgres-stock $(PG_SCENARIOS)
	$(BIN)/python -m pytest -q --engine-backend client $(CLIENT_SCENARIOS)

bench: $(STAMP)
	$(BIN)/python -m bench

docs: $(STAMP)
	$(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info src/*.egg-info
