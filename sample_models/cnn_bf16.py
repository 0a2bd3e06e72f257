"""sample_models/cnn.py in bfloat16: the same weights and input, cast. Compare the two runs:

    hooktui trace sample_models/cnn.py --save fp32.jsonl
    hooktui trace sample_models/cnn_bf16.py --save bf16.jsonl
    hooktui diff fp32.jsonl bf16.jsonl --rtol 0.02 --atol 1e-3
"""

import importlib.util
from pathlib import Path

import torch

# cnn.py beside this file, whichever way this one was loaded (hooktui, a test, an import).
_spec = importlib.util.spec_from_file_location("sample_cnn_float32", Path(__file__).with_name("cnn.py"))
_cnn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cnn)
build_float32, float32_inputs, loss_fn = _cnn.build_model, _cnn.example_inputs, _cnn.loss_fn


def build_model():
    return build_float32().to(torch.bfloat16)


def example_inputs():
    return float32_inputs().to(torch.bfloat16)
