"""Building a case in a tree without part of the API the cases use, so that a base revision without it still
compares: a tree whose declared choices are listed on the package itself, a tree without declared choices (its config
classes), without the bias group, or without ``new_cache``."""

from __future__ import annotations

from types import ModuleType

from ablations.measure.shapes import MODEL_SIZES


def declarations_of(components: ModuleType) -> ModuleType:
    """Where a tree's ``components`` lists its declared choices (``choice``, ``choices``): its
    ``components.declarations`` where the tree has it, else the package itself (a tree from before that module, or
    one without declared choices)."""
    return getattr(components, "declarations", components)


# The config class of each choice group in a tree without declared choices (no ``components.choice``).
CONFIG_CLASSES = {"pos": "PosConfig", "norm": "NormConfig", "ffn": "FFNConfig", "attn": "AttnConfig",
                  "bias": "BiasConfig"}


def undeclared_arch(components: ModuleType, kv: int | None = None, **values: object) -> object:
    """``ablations.regress.architecture.arch`` in tree ``components`` without declared choices: each group's value
    passed to its config class. A setting, or a group the tree has no class for, raises."""
    if any("." in key for key in values):
        raise ValueError("this tree has no setting flips")
    unknown = set(values) - set(CONFIG_CLASSES)
    if unknown:
        raise ValueError(f"this tree has no choice group {', '.join(sorted(unknown))}")
    groups = {g: getattr(components, CONFIG_CLASSES[g])(v, kv) if g == "attn"
              else getattr(components, CONFIG_CLASSES[g])(v) for g, v in values.items() if g != "bias"}
    bias = values.get("bias", "on") == "on"
    if hasattr(components, "BiasConfig"):
        return components.ArchConfig(model=components.ModelConfig(**MODEL_SIZES), **groups,
                                     bias=components.BiasConfig("on" if bias else "off"))
    # A tree without the bias group sets bias on the model (``ModelConfig.bias``).
    return components.ArchConfig(model=components.ModelConfig(**MODEL_SIZES, bias=bias), **groups)


def one_layer_cache(components: ModuleType, arch: object, batch: int, max_len: int) -> object:
    """The attention's own cache for one layer; a tree without ``new_cache`` has only the K/V cache."""
    if hasattr(components, "new_cache"):
        return components.new_cache(arch, batch, max_len, n_layers=1)
    return components.KVCache(1, batch, arch.n_kv_heads, max_len, arch.head_dim)
