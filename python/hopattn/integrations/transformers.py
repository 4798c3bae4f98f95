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
per-head sinks) is sinks, in float32.

Batches whose sequences differ in length run hopattn.flash_attn_varlen_func (since 0.4), as
transformers' FlashAttention path does:
  - padded batches: the mask function registered beside the attention is transformers'
    FlashAttention one, which gives the (batch, kv_len) padding mask (None without padding); the
    valid tokens are gathered, attended per sequence (causal bottom-right per sequence, so left and
    right padding both work) and scattered back, padded rows left 0;
  - packed batches (padding-free training): `cu_seq_lens_q`, `cu_seq_lens_k`, `max_length_q`,
    `max_length_k` given by the caller, or position_ids that restart within one row (batch 1).
Head dims 64, 128 and 256, as flash_attn_varlen_func takes them.
"""
from __future__ import annotations

import torch

import hopattn

NAME = "hopattn"


def varlen_layout(attention_mask, q_len):
    """From transformers' (batch, kv_len) padding mask (1 / True: a valid token), the gather
    indices and cumulative lengths of the valid keys and of the last q_len queries of each row:
    (indices_q, indices_k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k), indices into
    the flattened (batch * len) rows, cu_seqlens int32 (batch + 1), the maxima Python ints. The
    queries are the valid ones among each row's last q_len positions (left padding), except at
    q_len 1 (a decode step), where every row has its query, as in transformers' FlashAttention path."""
    mask_k = attention_mask.bool()
    mask_q = mask_k[:, -q_len:]

    def layout(mask):
        lens = mask.sum(dim=-1, dtype=torch.int32)
        cu = torch.nn.functional.pad(torch.cumsum(lens, dim=0, dtype=torch.int32), (1, 0))
        return torch.nonzero(mask.flatten(), as_tuple=False).flatten(), cu, int(lens.max().item()) if lens.numel() else 0

    indices_k, cu_k, max_k = layout(mask_k)
    if q_len == 1:  # a decode step: every row has its one query (transformers' FlashAttention path)
        batch = mask_k.shape[0]
        cu_q = torch.arange(batch + 1, dtype=torch.int32, device=mask_k.device)
        return cu_q[:-1].long(), indices_k, cu_q, cu_k, 1, max_k
    indices_q, cu_q, max_q = layout(mask_q)
    return indices_q, indices_k, cu_q, cu_k, max_q, max_k


def packed_layout(position_ids):
    """cu_seqlens (int32) and the longest sequence of one row of packed sequences whose positions
    restart at their minimum (transformers' prepare_fa_kwargs_from_position_ids)."""
    pos = position_ids.reshape(-1)
    starts = (pos == pos.min()).nonzero().view(-1).to(torch.int32)
    cu = torch.cat([starts, torch.tensor([pos.numel()], dtype=torch.int32, device=pos.device)])
    return cu, int(cu.diff().max().item())


def _is_packed(position_ids, batch):
    """One row whose positions restart (several sequences packed end to end)."""
    if position_ids is None or batch != 1 or position_ids.shape[-1] <= 1:
        return False
    pos = position_ids.reshape(-1)
    return bool((pos.diff() < 0).any().item())


def _varlen(q, k, v, cu_q, cu_k, max_q, max_k, scaling, causal, options):
    return hopattn.flash_attn_varlen_func(q, k, v, cu_q.to(torch.int32).contiguous(), cu_k.to(torch.int32).contiguous(),
                                          int(max_q), int(max_k), softmax_scale=scaling, causal=causal, **options)


def hopattn_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                              sliding_window=None, softcap=None, s_aux=None, **kwargs):
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
    batch, q_len, heads_q, hdim = q.shape
    causal = is_causal and q_len > 1

    if attention_mask is not None:  # padding: gather the valid tokens, attend per sequence, scatter back
        if attention_mask.dim() != 2:
            raise ValueError(f"hopattn: attention_mask of shape {tuple(attention_mask.shape)}: a (batch, kv_len) "
                             "padding mask is expected (register() installs transformers' FlashAttention mask)")
        kv_len = attention_mask.shape[-1]
        k, v = k[:, :kv_len], v[:, :kv_len]  # a static cache may hold more rows than the mask covers
        iq, ik, cu_q, cu_k, max_q, max_k = varlen_layout(attention_mask, q_len)
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731  (batch * len, heads, hdim)
        out = _varlen(flat(q).index_select(0, iq), flat(k).index_select(0, ik), flat(v).index_select(0, ik),
                      cu_q, cu_k, max_q, max_k, scaling, causal, options)
        full = out.new_zeros(batch * q_len, heads_q, hdim)
        full.index_copy_(0, iq, out)
        return full.view(batch, q_len, heads_q, hdim), None

    cu_q, cu_k = kwargs.get("cu_seq_lens_q"), kwargs.get("cu_seq_lens_k")
    max_q, max_k = kwargs.get("max_length_q"), kwargs.get("max_length_k")
    position_ids = kwargs.get("position_ids")
    if not all(x is not None for x in (cu_q, cu_k, max_q, max_k)) and _is_packed(position_ids, batch):
        cu_q, max_q = packed_layout(position_ids)
        cu_k, max_k = cu_q, max_q
    if all(x is not None for x in (cu_q, cu_k, max_q, max_k)):  # packed sequences, no padding
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
        out = _varlen(flat(q), flat(k), flat(v), cu_q, cu_k, max_q, max_k, scaling, causal, options)
        return out.view(batch, -1, heads_q, hdim), None

    out = hopattn.flash_attn_func(q, k, v, softmax_scale=scaling, causal=causal, **options)
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
