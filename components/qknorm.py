"""QK-norm: RMSNorm over each attention head's query and key vectors, before the rotation and the scores.

Neither GPT-2 nor Llama-2 has it; Gemma-3, Qwen3 and OLMo-2 do. Large models' attention logits ``q·k`` can grow
until the softmax is nearly one-hot and the loss diverges (Dehghani et al. 2023); normalising Q and K bounds each
logit by the norm weights and ``sqrt(head_dim)``, whatever the projections' scale. Q has one weight of size head_dim
and K another, each shared by every head (Qwen3's ``q_norm``/``k_norm``): 2 * head_dim parameters per layer.
Attention applies it to Q and K of shape (batch, heads, seq, head_dim) before RoPE, so the cached K is normalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from components.choice import Choice, Claim
from components.config import require_positive
from components.declarations import declare
from components.norms import RMSNorm
from components.registry import Registry
from components.work import Step, Work, norm

if TYPE_CHECKING:
    from components.config import ArchConfig

QKNORMS: Registry[type[nn.Module] | None] = Registry("qknorm.name")
QKNORMS.add("off", None)  # builds nothing: attention's ``qk`` list stays empty


@dataclass
class QKNormConfig:
    name: str = "off"  # off | on
    # Qwen3's and Gemma-3's value; Llama-2's own norm (1e-5) is a separate setting, ``norm.eps``.
    eps: float = 1e-6

    def check(self, arch: ArchConfig) -> None:
        require_positive("qknorm.eps", self.eps)


@QKNORMS.register("on")
class QKNorm(nn.Module):
    """``q / sqrt(mean(q^2) + eps) * q_norm.weight`` per head, and the same for K with ``k_norm.weight``.

    The two weights are ``RMSNorm``'s (``F.rms_norm``, fp32 inside for reduced-precision input), named
    ``q_norm.weight``/``k_norm.weight`` so ``init_weights`` starts them at ones like every norm weight.
    """

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        self.q_norm = RMSNorm(arch.head_dim, eps=arch.qknorm.eps)
        self.k_norm = RMSNorm(arch.head_dim, eps=arch.qknorm.eps)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        """Reads and writes Q (n_heads vectors per token) and K (n_kv_heads), and reads both weights."""
        hd = arch.head_dim
        q = norm(hd, step.tokens * arch.model.n_heads, hd)
        k = norm(hd, step.tokens * arch.n_kv_heads, hd)
        return q + k

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q_norm(q), self.k_norm(k)


QKNORM = declare(Choice(
    group="qknorm", title="QK-norm", config=QKNormConfig, registry=QKNORMS, hook="qk", order=60,
    display={"off": "no QK-norm", "on": "QK-norm"},
    about={"off": "Q and K as projected",
           "on": "RMSNorm over each head's Q and K before the rotation (Gemma-3, Qwen3, OLMo-2)"},
    claim=Claim(
        "QK-norm stabilises training (large learning rates, no loss spikes) at little cost",
        (("Dehghani et al. 2023 (ViT-22B), \"QK Normalization\"",
          "training diverged after a few thousand steps at ~8B parameters from attention logits growing to "
          "near-one-hot softmax; LayerNorm on Q and K removed it (no loss figure)"),
         ("Wortsman et al. 2023, \"Small-scale proxies for large-scale Transformer training instabilities\"",
          "qk-layernorm mitigates the attention logit growth instability: considerably lower learning-rate "
          "sensitivity, low loss at high learning rates (no loss figure)"),
         ("Qwen3 Technical Report 2025, architecture", "QK-Norm added \"to ensure stable training\"; not ablated"),
         ("Gemma 3 Technical Report 2025, architecture", "QK-norm replaces Gemma 2's soft-capping; not ablated")),
        evidence="stability",
    ),
))
