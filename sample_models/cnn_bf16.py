"""sample_models/cnn.py in bfloat16: the same weights and input, cast. Compare the two runs:

    hooktui trace sample_models/cnn.py --save fp32.jsonl
    hooktui trace sample_models/cnn_bf16.py --save bf16.jsonl
    hooktui diff fp32.jsonl bf16.jsonl --rtol 0.02 --atol 1e-3
"""

import torch
from cnn import build_model as build_float32
from cnn import example_inputs as float32_inputs
from cnn import loss_fn  # noqa: F401 (the model file's loss_fn)


def build_model():
    return build_float32().to(torch.bfloat16)


def example_inputs():
    return float32_inputs().to(torch.bfloat16)
