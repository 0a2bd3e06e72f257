"""A small training script whose loss goes NaN at step 36, for a realistic reason.

Binary classification of generated points: a DataLoader, AdamW and a learning rate that
warms up linearly. The model ends in a Sigmoid and computes its loss itself (as Hugging Face
models do when given labels) with the textbook formula -(y log p + (1 - y) log(1 - p)).
As the learning rate climbs, the logits grow; once one passes about 16.6, float32 rounds
sigmoid(z) to exactly 1.0, so log(1 - p) is log(0) = -inf, and for that sample's
(1 - y) = 0 the product 0 * -inf is NaN. The loss is NaN at step 36 (the learning rate is
then 0.046 of its 0.05), and AdamW would spread it into every weight. The fix: give
F.binary_cross_entropy_with_logits the logits (it never takes log(0)).

    python sample_models/train_loop.py                          # the loss goes NaN at step 36
    python sample_models/train_loop.py --guard                  # hooktui.guard: where it was born
    hooktui run sample_models/train_loop.py --debug-step 36     # the app on step 36
    hooktui sample_models/train_loop.py                         # a model file too: one batch

As a model file, `hooktui` opens the model on the first batch (finite: the NaN needs 36
steps of training).
"""

import argparse
import contextlib
import math

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PEAK_LR = 0.05
WARMUP_STEPS = 40


class NaiveBCE(nn.Module):
    """Binary cross-entropy of probabilities, written out by hand."""

    def forward(self, p, y):
        return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()  # log(0) once p rounds to 1.0


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1))
        self.prob = nn.Sigmoid()
        self.criterion = NaiveBCE()

    def forward(self, x, y=None):
        p = self.prob(self.encoder(x)).squeeze(-1)
        return p if y is None else self.criterion(p, y)


def dataset(n: int = 256) -> TensorDataset:
    """Two classes of points in 8-D, one unit apart in each coordinate (easy to separate)."""
    generator = torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (n,), generator=generator).float()
    x = torch.randn(n, 8, generator=generator) + (2 * y[:, None] - 1)
    return TensorDataset(x, y)


def loader() -> DataLoader:
    return DataLoader(dataset(), batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(1))


# -- as a model file (`hooktui sample_models/train_loop.py`) -----------------------------
def build_model():
    torch.manual_seed(0)
    return Classifier()


def example_inputs():
    x, y = next(iter(loader()))
    return (x, y)


# -- as a training script ---------------------------------------------------------------
def train(steps: int = 60, guard: bool = False, debug_step: int | None = None, log=print) -> list[float]:
    """Train for `steps` steps; the losses. `guard`: under hooktui.guard; `debug_step`: that
    step runs under hooktui.debug."""
    import hooktui

    model = build_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=PEAK_LR, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / WARMUP_STEPS))
    batches = loader()
    losses: list[float] = []
    step = 0
    with hooktui.guard(model) if guard else contextlib.nullcontext():
        while step < steps:
            for x, y in batches:
                optimizer.zero_grad()
                if step == debug_step:
                    loss = hooktui.debug(model, lambda: model(x, y))  # forward, loss and backward
                else:
                    loss = model(x, y)
                    loss.backward()
                lr = schedule.get_last_lr()[0]
                optimizer.step()
                schedule.step()
                losses.append(loss.item())
                first_nan = not torch.isfinite(loss) and all(map(math.isfinite, losses[:-1]))
                if step % 10 == 0 or first_nan:
                    log(f"step {step:3d}  lr {lr:.4f}  loss {loss.item():.4f}")
                step += 1
                if step == steps:
                    break
    return losses


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--guard", action="store_true", help="train under hooktui.guard(model)")
    parser.add_argument("--debug-step", type=int, metavar="N", help="run step N under hooktui.debug")
    args = parser.parse_args(argv)
    train(args.steps, guard=args.guard, debug_step=args.debug_step)


if __name__ == "__main__":
    main()
