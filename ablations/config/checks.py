"""Turn a composed config into what the runner needs, and reject what cannot run, in one line each: the model it
describes (``arch_from``) and the baseline it names (``baseline_from``) read into ``components``' dataclasses, at the
point's sizes.

Hydra's schema already rejected unknown options, wrong types and unknown keys, except those added with ``+``
(``check_keys``). What is left is every rule that spans fields, checked for every point of a sweep before the
first one starts.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError

from ablations.config.run_config import RunConfig
from blockbench import choices
from components import ArchConfig, ModelConfig
from components.baselines import baseline_of
from components.config import ConfigError
from components.matched_params import match_params


def arch_from(cfg: DictConfig) -> ArchConfig:
    """The components' ``ArchConfig`` described by a composed run config: the sizes and every declared choice."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    model.pop("gqa_kv_heads", None)
    groups = {choice.group: choice.config(**OmegaConf.to_container(cfg[choice.group], resolve=True))
              for choice in choices()}
    arch = ArchConfig(model=ModelConfig(**model), **groups)
    return match_params(arch) if cfg.get("match_params") else arch


def baseline_from(cfg: DictConfig, arch: ArchConfig) -> ArchConfig:
    """The baseline a composed run config names (``baseline=gpt2|llama2``), at the point's sizes."""
    return baseline_of(arch, str(cfg.baseline.name), int(cfg.model.gqa_kv_heads))


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Shape:
    batch: int
    seq: int

    def __str__(self) -> str:
        return f"{self.batch}x{self.seq}"


def _value(v: object) -> object:
    return v.value if hasattr(v, "value") else v


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


def check_keys(cfg: DictConfig, overrides: list[str] | None = None) -> None:
    """Reject keys the schema does not have. Hydra's ``+key=value`` (and ``++``) opens the struct and adds any
    key silently, typos included (``+train.step=100``); merging the composed config into a fresh ``RunConfig``
    finds them. ``hydra.*`` is Hydra's own and is left out; a config group (``+sweep=norm``) adds no key."""
    plain = OmegaConf.to_container(cfg, resolve=False)
    plain.pop("hydra", None)
    try:
        OmegaConf.merge(OmegaConf.structured(RunConfig), plain)
    except ConfigKeyError as exc:
        added = next((o for o in overrides or [] if o.startswith("+") and _adds(o, exc.full_key)), None)
        what = f"Could not add '{added}'" if added else f"Unknown key '{exc.full_key}'"
        allowed = ", ".join(f.name for f in fields(exc.object_type))
        hint = "; +sweep=NAME adds a sweep" if exc.object_type is RunConfig else ""
        raise ConfigError(f"{what}; Key '{exc.key}' not in '{exc.object_type.__name__}' (allowed keys: {allowed})"
                          f"{hint}") from None


def _adds(override: str, key: str) -> bool:
    """Whether ``+name=value`` adds ``key`` (``+model.x.y=1`` adds ``model.x``)."""
    name = override.lstrip("+").split("=")[0]
    return name == key or name.startswith(key + ".")


def check_run(cfg: DictConfig) -> ArchConfig:
    """Every cross-field rule of the measurement for one point; raises ``ConfigError`` with one line naming the key.

    The ``train.``/``data.`` rules belong to ``ablations.quality``; ``ablations.runner.plan_point`` runs both.
    """
    arch = arch_from(cfg).validate()
    baseline_from(cfg, arch).validate()
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
    return arch

