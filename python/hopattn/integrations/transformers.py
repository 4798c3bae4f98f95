"""Hugging Face transformers: `register()` adds attn_implementation="hopattn".

    import hopattn.integrations.transformers as hop
    hop.register()
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="hopattn", torch_dtype=torch.bfloat16)

The attention function takes transformers' (batch, heads, seqlen, hdim) query/key/value, runs
hopattn.flash_attn_func (causal as the module says, GQA without repeating K/V) and returns
(batch, seqlen, heads, hdim). Padded batches (an attention mask with padding) need variable-length
sequences, which hopattn does not have yet: such a call raises NotImplementedError. The mask
function registered beside it is transformers' FlashAttention one (None without padding).
"""
from __future__ import annotations

import hopattn

NAME = "hopattn"


def hopattn_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                              sliding_window=None, softcap=None, **kwargs):
    if attention_mask is not None:
        raise NotImplementedError("hopattn: padded batches (an attention mask) need varlen sequences, not supported yet")
    if dropout:
        raise NotImplementedError("hopattn: attention dropout is not supported")
    if sliding_window is not None or softcap is not None:
        raise NotImplementedError("hopattn: sliding windows and softcapping are not supported yet")
    is_causal = kwargs.get("is_causal", getattr(module, "is_causal", True))
    q = query.transpose(1, 2)  # (batch, seqlen, heads, hdim): strided views, no copy
    k = key.transpose(1, 2)
    v = value.transpose(1, 2)
    if q.stride(-1) != 1:
        q = q.contiguous()
    out = hopattn.flash_attn_func(q, k, v, softmax_scale=scaling, causal=bool(is_causal) and q.shape[1] > 1)
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
