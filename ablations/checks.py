"""Turn a composed config into what the runner needs, and reject what cannot run, in one line each.

Hydra's schema already rejected unknown keys, options and wrong types. What is left is every rule that
spans fields, checked for every point of a sweep before the first one starts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from omegaconf import DictConfig, OmegaConf

from components import ArchConfig, AttnConfig, FFNConfig, ModelConfig, NormConfig, PosConfig
from components.config import ConfigError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Shape:
    batch: int
    seq: int

    def __str__(self) -> str:
        return f"{self.batch}x{self.seq}"


def _value(v: object) -> object:
    return v.value if hasattr(v, "value") else v


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
    removed = 2 * (m.d_model + int(m.bias)) * (m.n_heads - arch.n_kv_heads) * arch.head_dim
    if removed == 0:
        return arch
    swiglu = arch.ffn.name == "swiglu"
    per_unit = (3 if swiglu else 2) * m.d_model + (2 if swiglu else 1) * int(m.bias)
    return replace(arch, ffn=replace(arch.ffn, hidden_dim=arch.ffn_hidden + round(removed / per_unit)))


def baseline_of(arch: ArchConfig) -> ArchConfig:
    """The GPT-2 block at the same sizes: every choice at its GPT-2 value (the dataclass defaults)."""
    return ArchConfig(model=arch.model, pos=PosConfig(), norm=NormConfig(), ffn=FFNConfig(), attn=AttnConfig())


def variant_label(arch: ArchConfig, matched: bool = False) -> str:
    """A name that says what differs from the GPT-2 baseline: ``gpt2``, ``rmsnorm``, ``gqa2``, ``llama2``.

    Three of the four at Llama-2's values name the Llama-2 block and the odd one out: ``llama2-learned``,
    ``llama2-layernorm``, ``llama2-gelu``, ``llama2-mha`` (the leave-one-out points), ``llama2-mqa``.
    ``matched`` (``match_params``) adds ``-matched`` where it widened the FFN.
    """
    kv, heads = arch.n_kv_heads, arch.model.n_heads
    attn = "mha" if kv == heads else "mqa" if kv == 1 else f"gqa{kv}"
    suffix = "-matched" if matched and kv < heads else ""
    llama = {"pos": arch.pos.name == "rope", "norm": arch.norm.name == "rmsnorm", "ffn": arch.ffn.name == "swiglu",
             "attn": attn.startswith("gqa")}
    if all(llama.values()):
        return "llama2" + suffix
    if sum(llama.values()) == 3:
        odd = next(k for k, is_llama in llama.items() if not is_llama)
        return f"llama2-{attn if odd == 'attn' else getattr(arch, odd).name}" + suffix
    parts = [
        arch.pos.name if arch.pos.name != "learned" else "",
        arch.norm.name if arch.norm.name != "layernorm" else "",
        arch.ffn.name if arch.ffn.name != "gelu" else "",
        attn if attn != "mha" else "",
    ]
    changed = [p for p in parts if p]
    return ("+".join(changed) if changed else "gpt2") + suffix


def parse_shape(text: str, key: str) -> Shape:
    try:
        b, t = (int(p) for p in text.lower().split("x"))
    except ValueError:
        raise ConfigError(f"{key} entry {text!r} must be BATCHxSEQ, e.g. 4x512") from None
    if b < 1 or t < 1:
        raise ConfigError(f"{key} entry {text!r} needs a positive batch and sequence length")
    return Shape(b, t)


def resolve_device(cfg: DictConfig) -> torch.device:
    name = _value(cfg.device)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda but no CUDA device is available here; use device=cpu or device=auto")
    return torch.device(name)


def resolve_dtype(cfg: DictConfig, device: torch.device) -> torch.dtype:
    name = _value(cfg.dtype)
    if name == "float16" and device.type != "cuda":
        raise ConfigError(f"dtype=float16 is CUDA only; on {device.type} choose float32 or bfloat16")
    if name == "bfloat16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ConfigError("dtype=bfloat16 is not supported by this CUDA device; choose float32 or float16")
    return DTYPES[name]


def check_run(cfg: DictConfig) -> ArchConfig:
    """Every cross-field rule for one point; raises ``ConfigError`` with one line naming the key."""
    arch = arch_from(cfg).validate()
    baseline_of(arch).validate()
    device = resolve_device(cfg)
    resolve_dtype(cfg, device)
    if cfg.threads < 0:
        raise ConfigError(f"threads={cfg.threads} must be >= 0 (0 = all cores)")
    p = cfg.profile
    for key in ("rounds", "decode_rounds", "warmup", "peak_matmul_n"):
        if p[key] < (0 if key == "warmup" else 1):
            raise ConfigError(f"profile.{key}={p[key]} must be {'>= 0' if key == 'warmup' else '>= 1'}")
    if p.min_run_time <= 0:
        raise ConfigError(f"profile.min_run_time={p.min_run_time} must be > 0 seconds")
    limit = arch.model.max_seq_len
    for text in p.shapes:
        shape = parse_shape(text, "profile.shapes")
        if shape.seq > limit:
            raise ConfigError(
                f"profile.shapes entry {text} is longer than model.max_seq_len={limit} "
                f"(the {arch.pos.name} positions have no entry past it); raise model.max_seq_len"
            )
    for ctx in p.decode_contexts:
        if ctx < 1 or ctx + 1 > limit:
            raise ConfigError(
                f"profile.decode_contexts entry {ctx} must be in 1..{limit - 1} (model.max_seq_len={limit} "
                "must hold the context plus the decoded token)"
            )
    for b in p.decode_batch_sizes:
        if b < 1:
            raise ConfigError(f"profile.decode_batch_sizes entry {b} must be >= 1")
    if not cfg.measure and not cfg.train.enabled:
        raise ConfigError("measure=false and train.enabled=false leave nothing to run; enable one of them")
    if cfg.train.enabled:
        # Imported here: the quality package builds on this module.
        from ablations.quality.arch import check_quality
        from ablations.quality.data import check_data

        check_quality(cfg, arch)
        check_data(cfg.data.path, cfg.train.context, max(cfg.train.extrapolation), cfg.data.val_fraction)
    return arch
