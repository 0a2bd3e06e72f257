# Everything a fresh clone needs: `make run` and `make test` create the virtualenv,
# install torch (pinned to a CPU build unless the venv already has one) and hooktui.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Pinned: an unpinned `torch` on a machine without one may pull a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
MODEL ?= sample_models/cnn.py
STAMP := $(VENV)/.installed

.PHONY: install run test trace bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: install
	$(BIN)/hooktui $(MODEL)

trace: install
	$(BIN)/hooktui trace $(MODEL)

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/memory.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache snapshot_report.html
