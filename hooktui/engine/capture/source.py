"""Where in the user's code a module was called."""

from __future__ import annotations

import inspect
import linecache
import os
import sys
from functools import lru_cache

import torch

from ..records.records import SourceLocation

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_ENGINE_DIR = os.path.dirname(os.path.dirname(__file__)) + os.sep  # hooktui/engine, every room of it


def caller_location() -> SourceLocation | None:
    """The innermost frame outside torch and this engine: the line that called the module.

    None when the call came from the engine itself (the root module's call).
    """
    frame = sys._getframe(1)
    places = _PLACES
    while frame is not None:
        code = frame.f_code
        place = places.get(code)
        if place is None:
            place = _place(code)
        if place is _USER:
            return _location(code.co_filename, frame.f_lineno, code.co_name)
        if place is _RUNNER:
            return None
        frame = frame.f_back
    return None


# What each code object met on the way up is (the same few dozen at every module call).
_USER, _RUNNER, _PASS = "user", "runner", "pass"
_PLACES: dict = {}
_PLACES_MAX = 1 << 14


def _place(code) -> str:
    filename = code.co_filename
    if filename.startswith(_ENGINE_DIR):
        place = _RUNNER if code.co_name == RUNNER_FUNCTION else _PASS
    else:
        place = _PASS if filename.startswith(_TORCH_DIR) else _USER
    if len(_PLACES) >= _PLACES_MAX:
        _PLACES.clear()
    _PLACES[code] = place
    return place


# The engine function that calls the root module (session.Session._forward).
RUNNER_FUNCTION = "_run_model_forward"


@lru_cache(maxsize=1024)
def definition_location(module_type: type) -> SourceLocation | None:
    """Where `module_type.forward` is defined."""
    try:
        forward = module_type.forward
        filename = inspect.getsourcefile(forward)
        _, lineno = inspect.getsourcelines(forward)
    except (TypeError, OSError, AttributeError):
        return None
    if filename is None:
        return None
    return _location(filename, lineno, f"{module_type.__name__}.forward")


# One record per call site, shared by every firing made there (records are never modified).
_LOCATIONS: dict[tuple[str, int, str], SourceLocation] = {}
_LOCATIONS_MAX = 1 << 14


def _location(filename: str, lineno: int, function: str) -> SourceLocation:
    key = (filename, lineno, function)
    location = _LOCATIONS.get(key)
    if location is None:
        if len(_LOCATIONS) >= _LOCATIONS_MAX:
            _LOCATIONS.clear()
        location = _LOCATIONS[key] = SourceLocation(
            filename=filename, lineno=lineno, function=function, line=linecache.getline(filename, lineno).strip()
        )
    return location
