"""FLOPs: counted by ``torch.utils.flop_counter`` and derived analytically, so each checks the other.

On CPU the flash-attention kernel of SDPA is invisible to ``FlopCounterMode`` in torch 2.13 (one case:
4.83 counted vs 5.64 GFLOP analytic). Counting therefore runs under the math SDPA backend, whose matmuls
the counter sees; the FLOPs of attention do not depend on the kernel that computes it.

Convention (as FlopCounterMode): a multiply-add is 2 FLOPs; only matrix products count; causal attention
counts the full T x S score matrix, as fused kernels compute and as Kaplan et al. count it.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from components import ArchConfig


def count_flops(fn: Callable[[], object]) -> int:
    """FLOPs that ``fn`` executes, with attention counted on every device."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def linear_weights_per_layer(cfg: ArchConfig) -> int:
    d, hd = cfg.model.d_model, cfg.head_dim
    attn = d * cfg.model.n_heads * hd * 2 + d * cfg.n_kv_heads * hd * 2  # q, out; k, v
    ffn = (3 if cfg.ffn.name == "swiglu" else 2) * d * cfg.ffn_hidden
    return attn + ffn


def analytic_forward_flops(cfg: ArchConfig, batch: int, seq: int, context: int | None = None) -> int:
    """Matmul FLOPs of one Decoder forward on ``seq`` new tokens attending to ``context`` keys.

    ``context`` defaults to ``seq`` (a full forward); a decode step has seq=1 and context = cache length.
    """
    keys = seq if context is None else context
    tokens = batch * seq
    dense = 2 * tokens * linear_weights_per_layer(cfg)
    attention = 2 * 2 * batch * cfg.model.n_heads * seq * keys * cfg.head_dim  # QK^T and PV
    return cfg.model.n_layers * (dense + attention)


def analytic_train_flops(cfg: ArchConfig, batch: int, seq: int) -> int:
    """Forward plus backward: backward of every matmul is two matmuls of the same size."""
    return 3 * analytic_forward_flops(cfg, batch, seq)


def per_token_forward_flops(cfg: ArchConfig, context: int) -> int:
    """FLOPs to produce one token at a given context, decoder stack only (for the sizes table)."""
    return analytic_forward_flops(cfg, 1, 1, context)
