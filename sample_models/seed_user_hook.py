"""The Stack Overflow question, as the user wrote it: their own `register_backward_hook`.

The same Linear(10, 5) -> Linear(5, 1) on a (1, 1, 10) input as seed.py, with the user's
deprecated legacy backward hook `printgradnorm` on fc1. Run it with
`hooktui sample_models/seed_user_hook.py`: *their* hook fires as a `user_hook` firing with
grad_input[0] of shape (1, 5) (not the (1, 1, 10) of fc1's input), and the Explain pane says
why: the legacy hook sits on fc1's last autograd op (ViewBackward0 on torch 2.13).
"""

import torch

from hooktui.examples.seed import Model


def printgradnorm(self, grad_input, grad_output):
    print("Inside " + self.__class__.__name__ + " backward")
    print("grad_input size:", grad_input[0].size())
    print("grad_output size:", grad_output[0].size())
    print("grad_input norm:", grad_input[0].norm())


def build_model():
    torch.manual_seed(0)
    model = Model()
    model.fc1.register_backward_hook(printgradnorm)
    return model


def example_inputs():
    return torch.arange(10, dtype=torch.float32).reshape(1, 1, 10)
