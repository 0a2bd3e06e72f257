"""Load what to debug: a model file (ordinary Python) or `package.module:attribute`.

A model file defines `model` (an nn.Module) or a zero-argument `build_model()`, and
`inputs` or a zero-argument `example_inputs()` (see engine/run/inputs.py for what inputs may
be). An optional `loss_fn(output)` returns the scalar that backward starts from.
Every failure is a LoadError with one message that names the file and what to define.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import keyword
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .gate import MODEL_ERRORS
from .inputs import map_tensors

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "examples" / "seed.py"  # hooktui/examples/seed.py


class LoadError(Exception):
    """A problem with what the user asked to load; `str()` is the message to show."""


@dataclass
class LoadedModel:
    model: nn.Module
    inputs: Any
    loss_fn: Callable[[Any], torch.Tensor] | None
    label: str
    path: str | None = None
    loss_label: str | None = None


def load_target(
    target: str | os.PathLike | None = None,
    *,
    device: str = "cpu",
    seed: int = 0,
    input_shape: tuple[int, ...] | None = None,
) -> LoadedModel:
    """Load a model file, or `package.module:attribute`, onto `device`."""
    target = str(target) if target is not None else str(DEFAULT_MODEL)
    try:
        device_obj = _device(device)
    except LoadError as exc:
        raise LoadError(f"{target}: {exc}") from exc.__cause__
    torch.manual_seed(seed)
    if not target.endswith(".py") and os.path.isfile(target):
        # Run as Python, a text file or a trace would fail with a baffling syntax error at best.
        if target.endswith((".jsonl", ".json")):
            raise LoadError(f"{target}: a trace file, not a model: hooktui view {target}")
        raise LoadError(f"{target}: not a model file: hooktui runs a Python file ending in .py")
    if target.endswith(".py") or os.sep in target or os.path.exists(target):
        loaded = _load_file(Path(target), input_shape, seed)
    elif ":" in target:
        loaded = _load_attribute(target, input_shape, seed)
    else:
        raise LoadError(f"{target}: not a model file (.py) nor package.module:attribute")
    try:
        loaded.model.to(device_obj)
        loaded.inputs = map_tensors(loaded.inputs, lambda t: t.to(device_obj))
    except (RuntimeError, AssertionError) as exc:
        raise LoadError(f"cannot move {loaded.label} to {device}: {exc}") from exc
    return loaded


def _device(name: str) -> torch.device:
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise LoadError(f"unknown device {name!r}: use cpu, cuda or cuda:N") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise LoadError(f"--device {name}: CUDA is not available on this machine (torch {torch.__version__})")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise LoadError(f"--device {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif device.type != "cpu":
        raise LoadError(f"unsupported device {name!r}: use cpu, cuda or cuda:N")
    return device


def _load_file(path: Path, input_shape: tuple[int, ...] | None, seed: int) -> LoadedModel:
    label = str(path)
    if path.is_dir():
        raise LoadError(f"{label}: is a folder; give a model file (.py) in it")
    if not path.is_file():
        raise LoadError(f"{label}: no such file")
    try:
        code = compile(path.read_bytes(), str(path), "exec")
    except SyntaxError as exc:
        raise LoadError(f"{label}:{exc.lineno}: syntax error: {exc.msg}") from exc
    folder = str(path.resolve().parent)
    name = _importable_name(path.resolve(), folder)
    module = types.ModuleType(name or f"hooktui_model_{path.stem}")
    module.__file__ = str(path.resolve())
    if name:
        sys.modules[name] = module
    # The file's folder is importable while it loads, as it would be with `python FILE`.
    sys.path.insert(0, folder)
    try:
        exec(code, module.__dict__)
    except MODEL_ERRORS as exc:
        raise LoadError(f"{label}: raised while loading: {type(exc).__name__}: {exc}") from exc
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return _from_namespace(vars(module), label, str(path.resolve()), input_shape, seed)


def _importable_name(path: Path, folder: str) -> str | None:
    """The file's own stem, when that name imports this very file: pickle finds a function
    or class by module and name, in this process (a fork) or a fresh one (spawn,
    forkserver), as it finds a script's under `python FILE`: a multiprocessing Pool over a
    function of the model file, torch.save of its model. The folder then stays on sys.path,
    at the end (it shadows nothing). None where the name is taken (`test.py`, a second
    model of the same name) or is no module name (`my-model.py`): a private name, which
    pickle refuses at once (a spawned process would fail to import it, and a Pool would
    start new ones forever)."""
    stem = path.stem
    if not stem.isidentifier() or keyword.iskeyword(stem) or stem in sys.modules or stem in sys.builtin_module_names:
        return None
    added = folder not in sys.path
    if added:
        sys.path.append(folder)
    spec = importlib.machinery.PathFinder.find_spec(stem)
    if spec is not None and spec.origin is not None and Path(spec.origin).resolve() == path:
        return stem
    if added:
        sys.path.remove(folder)
    return None


def _load_attribute(target: str, input_shape: tuple[int, ...] | None, seed: int) -> LoadedModel:
    module_name, _, attr = target.partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise LoadError(f"{target}: cannot import {module_name}: {exc}") from exc
    except MODEL_ERRORS as exc:
        raise LoadError(f"{target}: {module_name} raised while importing: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(os.getcwd())
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise LoadError(f"{target}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    model = _instantiate(obj, target)
    if input_shape is None:
        raise LoadError(f"{target}: pass --input-shape (e.g. --input-shape 1,3,32,32) to give it a random input")
    return LoadedModel(model, _random_input(input_shape, seed), None, target, getattr(module, "__file__", None))


def _from_namespace(ns: dict[str, Any], label: str, path: str, input_shape, seed: int) -> LoadedModel:
    if isinstance(ns.get("model"), nn.Module):
        model = ns["model"]
    elif callable(ns.get("build_model")):
        model = _instantiate(ns["build_model"], f"{label}: build_model()")
    else:
        raise LoadError(f"{label}: no model found: define `model` (an nn.Module) or a zero-argument `build_model()`")
    if input_shape is not None:
        inputs = _random_input(input_shape, seed)
    elif "inputs" in ns:
        inputs = ns["inputs"]
    elif callable(ns.get("example_inputs")):
        try:
            inputs = ns["example_inputs"]()
        except MODEL_ERRORS as exc:
            raise LoadError(f"{label}: example_inputs() raised: {type(exc).__name__}: {exc}") from exc
    else:
        raise LoadError(f"{label}: no inputs found: define `inputs` or a zero-argument `example_inputs()`, or pass --input-shape")
    loss_fn = ns.get("loss_fn")
    if loss_fn is not None and not callable(loss_fn):
        raise LoadError(f"{label}: loss_fn must be a function of the model's output")
    loss_label = f"loss_fn(output) from {Path(label).name}" if loss_fn is not None else None
    return LoadedModel(model, inputs, loss_fn, label, path, loss_label)


def _instantiate(obj: Any, label: str) -> nn.Module:
    if isinstance(obj, nn.Module):
        return obj
    if isinstance(obj, type) and issubclass(obj, nn.Module) or callable(obj):
        try:
            model = obj()
        except MODEL_ERRORS as exc:
            raise LoadError(f"{label} raised: {type(exc).__name__}: {exc}") from exc
        if isinstance(model, nn.Module):
            return model
        raise LoadError(f"{label} returned {type(model).__name__}, not an nn.Module")
    raise LoadError(f"{label} is a {type(obj).__name__}, not an nn.Module or a function that builds one")


def _random_input(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator)
