"""What the commands share: loading the model with friendly errors."""

from __future__ import annotations

from ..errors import UserError
from ..engine.run.loader import LoadedModel, LoadError, load_target
from ..engine.run.session import Session
from ..engine.summaries.stats import StatsOptions
from .options import ModelOptions


def load(model: ModelOptions) -> LoadedModel:
    try:
        return load_target(model.target, device=model.device, seed=model.seed, input_shape=model.input_shape)
    except LoadError as exc:
        raise UserError(str(exc)) from exc


def session_for(loaded: LoadedModel, *, pause: bool, legacy: bool = False, keep_events: bool = True,
                values: int | None = None) -> Session:
    """`values`: values kept per tensor (None: StatsOptions' default; 0: none)."""
    if values is None:
        options = StatsOptions()
    else:
        options = StatsOptions(max_values=values) if values else StatsOptions(keep_values=False)
    return Session(
        loaded.model, loaded.inputs, loaded.loss_fn, pause=pause, label=loaded.label, loss_label=loaded.loss_label, legacy=legacy,
        keep_events=keep_events, options=options,
    )
