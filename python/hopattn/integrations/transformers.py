"""Hugging Face transformers: `register()` adds attn_implementation="hopattn".

    import hopattn.integrations.transformers as hop
    hop.register()
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="hopattn", torch_dtype=torch.bfloat16)

The attention function takes transformers' (batch, heads, seqlen, hdim) query/key/value, runs
hopattn.flash_attn_func (causal as the module says, GQA without repeating K/V) and returns
(batch, seqlen, heads, hdim). The options transformers' attention interface passes map onto
flash_attn_func's: `sliding_window` W (a key is visible iff q_pos - k_pos < W, transformers'
sliding_window_overlay) is window_size (W - 1, 0) for a causal module ((W - 1, W - 1) otherwise,
as transformers' FlashAttention path), `softcap` (Gemma 2) is softcap, and `s_aux` (gpt-oss's
per-head sinks) is sinks, in float32. Padded batches (an attention mask with padding) need
variable-length sequences, which hopattn does not have yet: such a call raises
NotImplementedError. The mask function registered beside it is transformers' FlashAttention one
(None without padding).
"""
from __future__ import annotations

import torch

import hopattn

NAME = "hopattn"


def hopattn_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                              sliding_window=None, softcap=None, s_aux=None, **kwargs):
    if attention_mask is not None:
        raise NotImplementedError("hopattn: padded batches (an attention mask) need varlen sequences, not supported yet")
    if dropout:
        raise NotImplementedError("hopattn: attention dropout is not supported")
    is_causal = bool(kwargs.get("is_causal", getattr(module, "is_causal", True)))
    q = query.transpose(1, 2)  # (batch, seqlen, heads, hdim): strided views, no copy
    k = key.transpose(1, 2)
    v = value.transpose(1, 2)
    if q.stride(-1) != 1:
        q = q.contiguous()
    options = {}
    if sliding_window is not None:
        if isinstance(sliding_window, bool) or not isinstance(sliding_window, int) or sliding_window < 1:
            raise ValueError(f"hopattn: sliding_window: {sliding_window!r}; a number of keys >= 1 is required")
        options["window_size"] = (sliding_window - 1, 0 if is_causal else sliding_window - 1)
    if softcap:
        options["softcap"] = float(softcap)
    if s_aux is not None:
        options["sinks"] = s_aux if s_aux.dtype == torch.float32 else s_aux.float()
    out = hopattn.flash_attn_func(q, k, v, softmax_scale=scaling, causal=is_causal and q.shape[1] > 1, **options)
    return out, None


def register() -> None:
    """Registers attn_implementation="hopattn" with transformers' AttentionInterface (and its mask
    function: FlashAttention's, which gives None for a batch without padding)."""
    from transformers import AttentionInterface
    AttentionInterface.register(NAME, hopattn_attention_forward)
    try:
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, flash_attention_mask
        ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, flash_attention_mask)
    except ImportError:  # older transformers: the mask is built by the model itself
        pass
