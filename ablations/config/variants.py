"""What a point is: the model a composed config describes, its GPT-2 baseline, and its name.

Pure functions of the config and ``components``' dataclasses; the measurement and the quality runs both
build on them, so they sit below both.
"""

from __future__ import annotations

from dataclasses import replace

from omegaconf import DictConfig, OmegaConf

from components import ArchConfig, AttnConfig, BiasConfig, FFNConfig, ModelConfig, NormConfig, PosConfig
from components import preset as make_preset


def arch_from(cfg: DictConfig) -> ArchConfig:
    """The components' ``ArchConfig`` described by a composed run config."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    model.pop("gqa_kv_heads", None)
    arch = ArchConfig(
        model=ModelConfig(**model),
        pos=PosConfig(**OmegaConf.to_container(cfg.pos, resolve=True)),
        norm=NormConfig(**OmegaConf.to_container(cfg.norm, resolve=True)),
        ffn=FFNConfig(**OmegaConf.to_container(cfg.ffn, resolve=True)),
        attn=AttnConfig(**OmegaConf.to_container(cfg.attn, resolve=True)),
        bias=BiasConfig(**OmegaConf.to_container(cfg.bias, resolve=True)),
    )
    return match_params(arch) if cfg.get("match_params") else arch


def match_params(arch: ArchConfig) -> ArchConfig:
    """Widen the FFN by the K/V projection weights that GQA/MQA removed, so the block has the parameters of its
    MHA version (to the nearest hidden unit), as Llama-2's GQA ablation did (Touvron et al. 2023, A.2.1).

    Removed: K and V lose ``(n_heads - n_kv_heads) * head_dim`` outputs, each ``d`` weights (+1 bias). One
    hidden unit costs ``2d`` (+1 bias) in GELU's two matrices and ``3d`` (+2) in SwiGLU's three.
    """
    arch.validate()
    m = arch.model
    bias = int(arch.bias.enabled)
    removed = 2 * (m.d_model + bias) * (m.n_heads - arch.n_kv_heads) * arch.head_dim
    if removed == 0:
        return arch
    swiglu = arch.ffn.name == "swiglu"
    per_unit = (3 if swiglu else 2) * m.d_model + (2 if swiglu else 1) * bias
    return replace(arch, ffn=replace(arch.ffn, hidden_dim=arch.ffn_hidden + round(removed / per_unit)))


def baseline_of(arch: ArchConfig) -> ArchConfig:
    """The GPT-2 block at the same sizes: every choice at its GPT-2 value (the dataclass defaults)."""
    return ArchConfig(model=arch.model, pos=PosConfig(), norm=NormConfig(), ffn=FFNConfig(), attn=AttnConfig(),
                      bias=BiasConfig())


def variant_label(arch: ArchConfig, matched: bool = False) -> str:
    """A name that says what differs from the GPT-2 baseline: ``gpt2``, ``rmsnorm``, ``gqa2``, ``nobias``,
    ``llama2``.

    Four of the five at Llama-2's values name the Llama-2 block and the odd one out: ``llama2-learned``,
    ``llama2-layernorm``, ``llama2-gelu``, ``llama2-mha`` (or ``-mqa``), ``llama2-bias`` (the leave-one-out
    points). Tied embeddings are GPT-2's and untied Llama-2's: a block of the Llama-2 family (four or five
    choices) with tied embeddings gets ``-tied``, any other with untied ones ``-untied``. ``matched``
    (``match_params``) adds ``-matched`` where it widened the FFN.
    """
    kv, heads = arch.n_kv_heads, arch.model.n_heads
    attn = "mha" if kv == heads else "mqa" if kv == 1 else f"gqa{kv}"
    suffix = "-matched" if matched and kv < heads else ""
    llama = {"pos": arch.pos.name == "rope", "norm": arch.norm.name == "rmsnorm", "ffn": arch.ffn.name == "swiglu",
             "attn": attn.startswith("gqa"), "bias": not arch.bias.enabled}
    family = sum(llama.values()) >= 4
    if family == arch.model.tie_embeddings:
        suffix = ("-tied" if family else "-untied") + suffix
    if all(llama.values()):
        return "llama2" + suffix
    if family:
        odd = next(k for k, is_llama in llama.items() if not is_llama)
        name = {"attn": attn, "bias": "bias"}.get(odd) or getattr(arch, odd).name
        return f"llama2-{name}" + suffix
    parts = [
        arch.pos.name if arch.pos.name != "learned" else "",
        arch.norm.name if arch.norm.name != "layernorm" else "",
        arch.ffn.name if arch.ffn.name != "gelu" else "",
        attn if attn != "mha" else "",
        "nobias" if not arch.bias.enabled else "",
    ]
    changed = [p for p in parts if p]
    return ("+".join(changed) if changed else "gpt2") + suffix


def llama2_70b_group() -> int:
    """Query heads per KV head in Llama-2-70B (64 / 8), from its preset."""
    ref = make_preset("llama2-70b")
    return ref.model.n_heads // ref.n_kv_heads


def llama_like_kv_heads(n_heads: int) -> int:
    """KV heads for a GQA counterfactual: the divisor of ``n_heads`` whose group size (query heads per KV
    head) is closest to Llama-2-70B's; ties go to more KV heads (the milder change)."""
    group = llama2_70b_group()
    divisors = [k for k in range(1, n_heads + 1) if n_heads % k == 0 and k < n_heads]
    if not divisors:
        return n_heads
    return min(divisors, key=lambda k: (abs(n_heads // k - group), -k))
