"""What is predicted: the one-choice flips of a model size, and the scenarios each is run in.

At every size the baseline is GPT-2's five choices (learned positions, LayerNorm, GELU, MHA, linear biases) and
each flip moves one to Llama-2's; ``llama2`` moves all five. Sizes, vocabulary and tied embeddings are the
model's. Where the size is a published preset its Llama-2 FFN rule and KV heads are the preset's (7B:
multiple_of 256; 70B: 4096 and 1.3, 8 KV heads); a size whose preset has MHA (7B, 13B) gets Llama-2-70B's group
of query heads per KV head.
"""

from __future__ import annotations

from dataclasses import dataclass

from ablations.config.variants import flips_of, llama_like_kv_heads
from components import PRESETS, ArchConfig, ModelConfig
from components import preset as make_preset


@dataclass(frozen=True)
class Scenario:
    mode: str  # prefill, decode or train (the roofline.work modes)
    batch: int
    seq: int  # prefill length, decode context, train sequence length

    @property
    def label(self) -> str:
        what = {"prefill": "prefill {seq}", "decode": "decode, context {seq}", "train": "train step {seq}"}
        return what[self.mode].format(seq=f"{self.seq:,}") + f", batch {self.batch}"


def preset_of(model_name: str) -> ArchConfig | None:
    name = model_name.replace("_", "-")
    return make_preset(name) if name in PRESETS else None


def flips(model: ModelConfig, gqa_kv_heads: int, model_name: str) -> dict[str, ArchConfig]:
    """Baseline, each one-choice flip, and all of Llama-2's choices, at the sizes of ``model``."""
    heads = model.n_heads
    kv = gqa_kv_heads if 1 <= gqa_kv_heads < heads and heads % gqa_kv_heads == 0 else llama_like_kv_heads(heads)
    published = preset_of(model_name)
    # Only the FFN rule and KV heads come from a preset; its other settings (RoPE's layout) change no count.
    keep = published.replace(pos=type(published.pos)()) if published is not None else None
    return flips_of(ArchConfig(model=model), kv, keep)
