# The two commands of the README: `make demo` and `make test`.
# Both create .venv on first use with the pinned dependencies (idempotent).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lit pytest lint bench clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (rlx-mlir needs Python 3.11)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP)
	$(BIN)/ruff check rlx_mlir test examples bench
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/lit -sv test
	$(BIN)/python -m pytest test

lit: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/lit -sv test

pytest: $(STAMP)
	$(BIN)/python -m pytest test

lint: $(STAMP)
	$(BIN)/ruff check rlx_mlir test examples bench

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
