"""The attention values (``ATTENTIONS``, key ``attn.name``) and how many K/V heads each has.

Each value's module class declares its rule as ``kv_heads_rule`` (a ``KVHeads``), as litgpt's config states
``n_query_groups``; ``resolve_kv_heads`` reads the rule from the registered class, never from the value's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from torch import nn

from components.config import ConfigError
from components.registry import Registry


class AttnSetting(Protocol):
    """What this module and MLA's (``components.mla``) read of the ``attn`` group's config: ``AttnConfig``, whose
    module imports both, so they name it by this shape (no import cycle, type-only ones included)."""

    name: str
    n_kv_heads: int | None
    window: int | None
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    q_lora_rank: int | None


ATTENTIONS: Registry[type[nn.Module]] = Registry("attn.name")

# The counts a rule can give (``KVHeads.count``).
PER_QUERY_HEAD = "one per query head"  # n_kv_heads = n_heads (MHA)
ONE_IN_ALL = "one in all"  # n_kv_heads = 1 (MQA)
CONFIGURED = "configured: a divisor of n_heads"  # n_kv_heads = attn.n_kv_heads (GQA)


@dataclass(frozen=True)
class KVHeads:
    """A value's KV-head rule: ``count`` KV heads for ``model.n_heads`` query heads.

    A fixed count refuses an ``attn.n_kv_heads`` that differs from it (``settable=False``: any value at all), saying
    ``why`` (``{n_heads}`` filled in) and what to do ``instead``. ``CONFIGURED`` takes ``attn.n_kv_heads``, which must
    divide ``model.n_heads``; left null it is refused when ``required``, else one per query head.
    """

    count: str
    why: str = ""
    instead: str = ""
    settable: bool = True
    required: bool = False


# A value whose class declares no rule (a plugin's): ``attn.n_kv_heads`` if set, else one per query head, as MHA.
UNDECLARED = KVHeads(CONFIGURED)


def kv_heads_rule(name: str) -> KVHeads:
    """The rule the class registered as ``attn=name`` declares (``UNDECLARED`` for none, or no such class)."""
    cls = ATTENTIONS.get(name) if name in ATTENTIONS else None
    return getattr(cls, "kv_heads_rule", None) or UNDECLARED


def resolve_kv_heads(attn: AttnSetting, n_heads: int) -> int:
    """``attn``'s KV heads at ``n_heads`` query heads, by its value's rule (``kv_heads_rule``)."""
    kv, rule = attn.n_kv_heads, kv_heads_rule(attn.name)
    if rule.count == CONFIGURED:
        if kv is None:
            if rule.required:
                raise ConfigError(f"attn={attn.name} needs attn.n_kv_heads: a divisor of model.n_heads={n_heads}")
            return n_heads
        if not isinstance(kv, int) or kv < 1 or n_heads % kv:
            divisors = [d for d in range(1, n_heads + 1) if n_heads % d == 0]
            raise ConfigError(f"attn.n_kv_heads={kv} must be >= 1 and divide model.n_heads={n_heads}; allowed: "
                              f"{divisors}")
        return kv
    fixed = n_heads if rule.count == PER_QUERY_HEAD else 1
    if kv is not None and (kv != fixed or not rule.settable):
        raise ConfigError(f"attn.n_kv_heads={kv} contradicts attn={attn.name} ({rule.why.format(n_heads=n_heads)}); "
                          f"{rule.instead}")
    return fixed
