"""What each command was asked to do: small frozen records that cli.py builds from the
command line, one per command. Below cli.py nothing sees argparse: a command, and the engine
under it, reads these fields only (and a test or another program can build them directly).

Each decision about an option is made once, here or in cli.py: `TraceOptions.keep_events`
says whether a trace keeps its firings (to save them or explain a stop), so `run_trace`
never re-derives it from `--save`.
"""

from __future__ import annotations

from dataclasses import dataclass

# The diff's defaults (engine/analysis/compare.py's), here so that `--help` does not import it.
DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-8


@dataclass(frozen=True)
class ModelOptions:
    """Which model to load, and how (`target` None: the built-in Stack Overflow example)."""

    target: str | None = None
    device: str = "cpu"
    seed: int = 0
    input_shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class BreakOptions:
    """The value breakpoints asked for (--break-nonfinite[-born], --break-above, --break-if),
    narrowed by --in / --phase / --tensor."""

    nonfinite: bool = False
    nonfinite_born: bool = False
    nan_only: bool = False
    above: tuple[tuple[str, float], ...] = ()
    condition: str | None = None
    module: str = "*"
    phase: str | None = None
    tensor: str = "*"

    @property
    def any(self) -> bool:
        return bool(self.nonfinite or self.nonfinite_born or self.above or self.condition)


@dataclass(frozen=True)
class Tolerances:
    """--rtol / --atol as given (None: the default); commands/diff.py checks and fills them."""

    rtol: float | None = None
    atol: float | None = None


@dataclass(frozen=True)
class OpenOptions:
    model: ModelOptions = ModelOptions()
    breaks: BreakOptions = BreakOptions()
    legacy: bool = False


@dataclass(frozen=True)
class TraceOptions:
    model: ModelOptions = ModelOptions()
    breaks: BreakOptions = BreakOptions()
    legacy: bool = False
    json: bool = False
    save: str | None = None  # a trace file to write too
    values: int | None = None  # values kept per tensor (None: the default; 0: statistics only)

    @property
    def keep_events(self) -> bool:
        """Printed firings are let go, unless a file is to be saved or a stop explained."""
        return self.save is not None or self.breaks.any


@dataclass(frozen=True)
class ViewOptions:
    trace: str | None
    against: str | None = None
    tolerances: Tolerances = Tolerances()


@dataclass(frozen=True)
class DiffOptions:
    paths: tuple[str, ...]
    json: bool = False
    tolerances: Tolerances = Tolerances()


def is_trace(target: str | None) -> bool:
    """A target `serve` opens with `view`: a trace file, not a model."""
    return bool(target) and target.endswith((".jsonl", ".json"))


@dataclass(frozen=True)
class ServeOptions:
    model: ModelOptions = ModelOptions()
    against: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    public_url: str | None = None
    token_file: str | None = None
    max_sessions: int = 2
    argv: tuple[str, ...] = ("serve",)  # the command line as given: each browser's app gets it, less serve's options

    @property
    def target(self) -> str | None:
        return self.model.target


@dataclass(frozen=True)
class RunOptions:
    script: str
    args: tuple[str, ...] = ()  # the script's own, untouched
    armed: bool = False  # arm the first model the script calls (hooktui attach PID)


@dataclass(frozen=True)
class AttachOptions:
    pid: str
    rank: int | None = None
    when: str | None = None  # open the first step whose loss makes this true
    step: int | None = None  # open this step (hooktui.arm counts them from 0)
    nonfinite: bool = False  # open the first step with a NaN/Inf, at that firing
    record: str | None = None  # save the step to this file, without pausing
