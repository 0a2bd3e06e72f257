"""A Hugging Face model as PEFT fine-tuning runs it: a tiny Llama (built from a config, no
download) with reentrant gradient checkpointing, a frozen embedding made to require grad by
`enable_input_require_grads()`, kwargs in, a ModelOutput (a dict) out. Every firing PyTorch's
own full hooks make, with their values, and in their order."""

import warnings

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from plain_hooks import assert_same_as_pytorch


def build():
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16,
    )
    model = LlamaForCausalLM(config)
    model.gradient_checkpointing_enable({"use_reentrant": True})
    model.enable_input_require_grads()
    model.model.embed_tokens.weight.requires_grad_(False)
    return model.train()


def inputs():
    return {"input_ids": torch.tensor([[1, 5, 7, 2]]), "attention_mask": torch.tensor([[1, 1, 1, 0]])}


def loss(output):
    return output.logits.pow(2).mean()


def test_tiny_llama_with_gradient_checkpointing_matches_pytorch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # use_cache vs checkpointing, full hooks on kwargs-only calls
        events = assert_same_as_pytorch(
            build,
            inputs,
            loss,
            # LlamaForCausalLM and LlamaModel return ModelOutput dicts: PyTorch's full hooks
            # never fire for them; hooktui's extra firings are checked below.
            engine_only=lambda e: e.module in ("", "model") and e.hook.startswith("backward"),
        )
    recomputed = {e.module for e in events if e.phase == "backward" and e.hook == "forward" and e.call == 1}
    assert "model.layers.0.self_attn.q_proj" in recomputed
    embed = [e for e in events if e.module == "model.embed_tokens" and e.hook == "backward_pre"]
    assert embed and embed[0].tensors[0].shape == [1, 4, 16]
