"""What is predicted: the one-choice flips of a model size, and the scenarios each is run in.

At every size the baseline is GPT-2's five choices (learned positions, LayerNorm, GELU, MHA, linear biases) and
each flip moves one to Llama-2's; ``llama2`` moves all five. Sizes, vocabulary and tied embeddings are the
model's. Where the size is a published preset its Llama-2 FFN rule and KV heads are the preset's (7B:
multiple_of 256; 70B: 4096 and 1.3, 8 KV heads); a size whose preset has MHA (7B, 13B) gets Llama-2-70B's group
of query heads per KV head.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ablations.config.variants import llama_like_kv_heads
from components import PRESETS, ArchConfig, AttnConfig, BiasConfig, FFNConfig, ModelConfig, NormConfig, PosConfig
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
    """Baseline, each one-choice flip, and all five, at the sizes of ``model``."""
    published = preset_of(model_name)
    ffn = published.ffn if published and published.ffn.name == "swiglu" else FFNConfig("swiglu")
    heads = model.n_heads
    kv = gqa_kv_heads if 1 <= gqa_kv_heads < heads and heads % gqa_kv_heads == 0 else llama_like_kv_heads(heads)
    base = ArchConfig(model=model)
    change = {"rope": {"pos": PosConfig("rope")}, "rmsnorm": {"norm": NormConfig("rmsnorm")}, "swiglu": {"ffn": ffn},
              f"gqa{kv}": {"attn": AttnConfig("gqa", kv)}, "nobias": {"bias": BiasConfig("off")}}
    out = {"gpt2": base}
    out.update({name: dataclasses.replace(base, **c) for name, c in change.items()})
    out["llama2"] = dataclasses.replace(base, **{k: v for c in change.values() for k, v in c.items()})
    return out
