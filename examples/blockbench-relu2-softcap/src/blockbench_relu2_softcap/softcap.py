"""``softcap=off|on``: Gemma-2's attention-logit soft cap, ``cap * tanh(scores / cap)`` on the scaled attention
scores before the causal mask (Gemma Team 2024, "Gemma 2", §2: soft-capping at 50.0 for attention logits; Hugging
Face's ``Gemma2Attention``, ``attn_logit_softcapping``).

A new group on blockbench's ``scores`` hook: ``softcap=on`` builds one ``SoftCap`` module per attention layer, and
blockbench's attention forms its scores explicitly for it (fused SDPA cannot take a transform). ``off`` builds
nothing, so a point without the cap is the block it always was. Neither GPT-2 nor Llama-2 has it
(``gpt2 == llama2 == "off"``): it joins no Llama-2 variant, and points without it keep their identity.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from blockbench import ArchConfig, Choice, Claim, ConfigError, Registry, Step, Work, declare

SOFTCAPS: Registry[type[nn.Module] | None] = Registry("softcap.name")
SOFTCAPS.add("off", None)  # builds nothing: attention keeps its fused paths


@dataclass
class SoftCapConfig:
    name: str = "off"  # off | on
    cap: float = 50.0  # Gemma 2's attention value (its final-logit cap, 30, is not a block choice)

    def check(self, arch: ArchConfig) -> None:
        if isinstance(self.cap, bool) or not isinstance(self.cap, int | float) or self.cap <= 0:
            raise ConfigError(f"softcap.cap={self.cap!r} must be a number > 0")


@SOFTCAPS.register("on")
class SoftCap(nn.Module):
    """``cap * tanh(scores / cap)``: near-identity for small logits, bounded by ±cap for large ones."""

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        self.cap = float(arch.softcap.cap)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        return Work()  # elementwise over the scores: not counted (blockbench's rule)

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return self.cap * torch.tanh(scores / self.cap)


SOFTCAP = declare(Choice(
    group="softcap", title="logit soft cap", config=SoftCapConfig, registry=SOFTCAPS, gpt2="off", llama2="off",
    hook="scores", order=1000, display={"off": "no soft cap", "on": "soft cap"},
    about={"off": "attention scores as computed", "on": "Gemma-2's `cap * tanh(scores / cap)` on the attention "
                                                       "scores, cap 50 (`softcap.cap`)"},
    claim=Claim("Soft-capping the attention logits stabilises training",
                (("Gemma Team 2024 (Gemma 2), §2", "logit soft-capping at 50.0 for the attention layers and 30.0 for "
                  "the final layer; not ablated"),
                 ("Gemma Team 2025 (Gemma 3), architecture", "soft-capping replaced by QK-norm; not ablated"))),
))
