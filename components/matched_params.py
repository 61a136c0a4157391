"""``match_params``: a block's FFN widened or narrowed by the weights its attention saves against MHA's, so the block
has the parameters of its MHA version (``variant=gqa_matched``, ``match_params=true``)."""

from __future__ import annotations

from dataclasses import replace

from components.attention import ATTENTIONS
from components.config import ArchConfig, ConfigError
from components.feedforward import FFNS
from components.work import Step


def attention_weights_saved(arch: ArchConfig) -> int:
    """How many weights ``arch``'s attention has fewer than its MHA version (negative: more). GQA and MQA drop K/V
    heads; MLA replaces K and V with its down- and up-projections and widens each head's query by its RoPE part,
    which saves weights or costs them depending on the sizes. Both counts are the attention's own (its ``work``'s
    weights at one token), so a new attention value is counted by its own module."""
    def weights(a: ArchConfig) -> int:
        return ATTENTIONS.get(a.attn.name).work(a, Step(1, 1, 1)).weights

    return weights(arch.replace(attn=type(arch.attn)("mha"))) - weights(arch)


def match_params(arch: ArchConfig) -> ArchConfig:
    """Change the FFN's width by the attention weights ``attention_weights_saved`` counts, so the block has the
    parameters of its MHA version (to the nearest hidden unit), as Llama-2's GQA ablation did for GQA (Touvron et
    al. 2023, A.2.1): GQA and MQA widen the FFN; MLA widens it where its latent saves weights and narrows it where
    its projections cost more than MHA's (few, wide heads).

    What one more hidden unit costs the FFN is its own ``work``'s weights at one token.
    """
    arch.validate()
    saved = attention_weights_saved(arch)
    if saved == 0:
        return arch
    ffn = FFNS.get(arch.ffn.name)
    width = arch.ffn_hidden
    one = Step(1, 1, 1)
    at = [arch.replace(ffn=replace(arch.ffn, hidden_dim=h)) for h in (width, width + 1)]
    per_unit = ffn.work(at[1], one).weights - ffn.work(at[0], one).weights
    hidden = width + round(saved / per_unit)
    if hidden < 1:
        raise ConfigError(f"match_params=true cannot match attn={arch.attn.name}: its attention has {-saved} weights "
                          f"more than MHA's, more than the FFN's {width} hidden units hold; use match_params=false")
    return arch.replace(ffn=replace(arch.ffn, hidden_dim=hidden))
