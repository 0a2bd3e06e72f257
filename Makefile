# Everything a fresh clone needs: `make run` and `make test` create the virtualenv,
# install torch (unless the venv already has one: the CPU build where there is no NVIDIA
# GPU, see scripts/install_torch.sh) and hooktui with its test tools and the web extra
# (`hooktui serve` is tested too).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The version tested; which build (CPU or CUDA) is install_torch.sh's choice.
TORCH_SPEC ?= torch==2.13.0
MODEL ?= sample_models/cnn.py
STAMP := $(VENV)/.installed

.PHONY: install run test trace bench clean

install: $(STAMP)

$(STAMP): pyproject.toml scripts/install_torch.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	sh scripts/install_torch.sh $(BIN) "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e '.[test,web]'
	touch $(STAMP)

run: install
	$(BIN)/hooktui $(MODEL)

trace: install
	$(BIN)/hooktui trace $(MODEL)

test: install
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/decompose.py
	$(BIN)/python benchmarks/peak.py
	$(BIN)/python benchmarks/memory.py
	$(BIN)/python benchmarks/app_memory.py
	$(BIN)/python benchmarks/ui_step.py
	$(BIN)/python benchmarks/hunt.py
	$(BIN)/python benchmarks/guard.py
	$(BIN)/python benchmarks/gpu.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache snapshot_report.html
