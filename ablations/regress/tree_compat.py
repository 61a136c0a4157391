"""Building a case in a tree without part of the API the cases use, so that a base revision without it still
compares: a tree whose declared choices are listed on the package itself, a tree without declared choices (its config
classes), without the bias group, or without ``new_cache``."""

from __future__ import annotations

from types import ModuleType

from ablations.regress.shapes import MODEL_SIZES


def declarations_of(c: ModuleType) -> ModuleType:
    """Where tree ``c`` lists its declared choices (``choice``, ``choices``): ``components.declarations`` in a tree
    that has it, else the package itself (a tree from before that module, or one without declared choices)."""
    return getattr(c, "declarations", c)


# The config class of each choice group in a tree without declared choices (no ``components.choice``).
CONFIG_CLASSES = {"pos": "PosConfig", "norm": "NormConfig", "ffn": "FFNConfig", "attn": "AttnConfig",
                  "bias": "BiasConfig"}


def undeclared_arch(c: ModuleType, kv: int | None = None, **values: object) -> object:
    """``ablations.regress.architecture.arch`` in tree ``c`` without declared choices: each group's value passed
    to its config class. A setting, or a group the tree has no class for, raises."""
    if any("." in key for key in values):
        raise ValueError("this tree has no setting flips")
    unknown = set(values) - set(CONFIG_CLASSES)
    if unknown:
        raise ValueError(f"this tree has no choice group {', '.join(sorted(unknown))}")
    groups = {g: getattr(c, CONFIG_CLASSES[g])(v, kv) if g == "attn" else getattr(c, CONFIG_CLASSES[g])(v)
              for g, v in values.items() if g != "bias"}
    bias = values.get("bias", "on") == "on"
    if hasattr(c, "BiasConfig"):
        return c.ArchConfig(model=c.ModelConfig(**MODEL_SIZES), **groups, bias=c.BiasConfig("on" if bias else "off"))
    # A tree without the bias group sets bias on the model (``ModelConfig.bias``).
    return c.ArchConfig(model=c.ModelConfig(**MODEL_SIZES, bias=bias), **groups)


def one_layer_cache(c: ModuleType, cfg: object, batch: int, max_len: int) -> object:
    """The attention's own cache for one layer; a tree without ``new_cache`` has only the K/V cache."""
    if hasattr(c, "new_cache"):
        return c.new_cache(cfg, batch, max_len, n_layers=1)
    return c.KVCache(1, batch, cfg.n_kv_heads, max_len, cfg.head_dim)
