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

# The CUDA path on the CPU (hooktui/engine/summaries/stats.py's HOOKTUI_DEVICE_PATH: every summary
# a DeviceSnapshot, batched, one host copy per pause): the tests that read statistics
# (parity, the app's keys and panes), the hunt, guard (also on two ranks), debug and diff,
# run a second time.
# The torch.compile parity test is left out: compiling is its time (~40 s), not the path;
# so is tests/engine/test_device_path.py, whose tests each set the switch themselves; so are
# the tests that summarise nothing (records made by hand, a widget beside Textual's): the
# switch cannot reach them. tests/ui/test_values_grid.py: the values grid against a DataTable,
# cells given as text; the 100,000-firing timeline and the 5,000-call overview: TensorStats made
# by hand.
DEVICE_PATH_TESTS := \
	tests/engine/test_parity_patterns.py tests/engine/test_parity_models.py \
	tests/engine/test_parity_seed.py tests/engine/test_samples.py tests/engine/test_stats.py \
	tests/engine/test_born.py tests/engine/test_breakpoints.py tests/engine/test_flow.py tests/engine/test_compare.py \
	tests/ui/test_ui_every_key.py tests/ui/test_ui_app.py tests/ui/test_ui_hunt.py \
	tests/ui/test_ui_overview.py tests/cli/test_cli_hunt.py tests/cli/test_cli_diff.py \
	tests/loop/test_guard.py tests/loop/test_debug_record.py tests/loop/test_debug_grads.py \
	tests/loop/test_hooktui_failures.py tests/engine/test_dtensor.py tests/loop/test_sharded_setups.py
DEVICE_PATH_SKIP := tests/engine/test_parity_patterns.py::test_compiled_models_fire_like_pytorch_on_every_backend \
	tests/ui/test_ui_app.py::test_timeline_with_100000_recorded_firings \
	tests/ui/test_ui_overview.py::test_5000_calls_compute_only_the_rows_on_screen

.PHONY: install run test test-device-path trace bench bench-check clean

install: $(STAMP)

# The extras install with the venv's torch pinned: an extra's requirement can fail the
# install, never replace that torch (a CUDA build, the CPU one).
$(STAMP): pyproject.toml scripts/install_torch.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	sh scripts/install_torch.sh $(BIN) "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e '.[test,web]' "torch==$$($(BIN)/python -W ignore -c 'import torch; print(torch.__version__)')"
	touch $(STAMP)

run: install
	$(BIN)/hooktui $(MODEL)

trace: install
	$(BIN)/hooktui trace $(MODEL)

# The import contracts first (pyproject.toml's [tool.importlinter]; README: How the engine
# is laid out): a second, not minutes of tests, to hear of an import that goes the wrong way.
# Both passes on every core (pytest-xdist; `PYTEST_WORKERS=0 make test`: one process). A test
# file stays on one worker (--dist loadfile): its module fixtures and the subprocesses a CLI
# test module starts at import (tests/cli/cli_run.py) are paid for once.
PYTEST_WORKERS ?= auto
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile

test: install
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_PARALLEL)
	$(MAKE) --no-print-directory test-device-path

test-device-path: install
	HOOKTUI_DEVICE_PATH=1 $(BIN)/python -m pytest $(PYTEST_PARALLEL) $(DEVICE_PATH_TESTS) $(addprefix --deselect ,$(DEVICE_PATH_SKIP))

bench: install
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/decompose.py
	$(BIN)/python benchmarks/firing_profile.py
	$(BIN)/python benchmarks/peak.py
	$(BIN)/python benchmarks/memory.py
	$(BIN)/python benchmarks/app_memory.py
	$(BIN)/python benchmarks/ui_step.py
	$(BIN)/python benchmarks/ui_step_parts.py
	$(BIN)/python benchmarks/hunt.py
	$(BIN)/python benchmarks/guard.py
	$(BIN)/python benchmarks/gpu.py

# The short cases, each ratio beside the last recorded one (benchmarks/recorded.json);
# `--record` keeps the new ones. A benchmark: it flags, it never fails.
bench-check: install
	$(BIN)/python benchmarks/check.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .import_linter_cache snapshot_report.html
