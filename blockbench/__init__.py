"""What a plugin may rely on (``docs/plugins.md``): the names here keep their meaning within a minor version.

A plugin declares a group with ``declare(Choice(...))``, adds a value to a group with its registry
(``@FFNS.register("relu2")``) and says what it is with ``choice("ffn").describe(...)``; its modules take an
``ArchConfig`` and state their cost as ``Work`` (``linear``, ``norm``, ``attention_core`` count the usual parts), and an
attention value says how many K/V heads it has with ``KVHeads``; ``blockbench.testing.check_choice`` runs the checks
every built-in passes. Everything else in ``components`` and ``ablations`` may change without notice.
"""

from components import (
    ATTENTIONS,
    FFNS,
    NORMS,
    POSITIONS,
    ArchConfig,
    Choice,
    Claim,
    ConfigError,
    GeluMLP,
    LayerNorm,
    ModelConfig,
    Registry,
    RMSNorm,
    SwiGLU,
)
from components.choice import HOOKS, choice, choices, declare
from components.kv_heads import CONFIGURED, ONE_IN_ALL, PER_QUERY_HEAD, KVHeads
from components.work import Step, Work, attention_core, linear, norm

# The built-in modules a plugin may subclass (``ffn=relu2`` is GPT-2's MLP with another activation).
__all__ = ["ATTENTIONS", "CONFIGURED", "FFNS", "HOOKS", "NORMS", "ONE_IN_ALL", "PER_QUERY_HEAD", "POSITIONS",
           "ArchConfig", "Choice", "Claim", "ConfigError", "GeluMLP", "KVHeads", "LayerNorm", "ModelConfig", "RMSNorm",
           "Registry", "Step", "SwiGLU", "Work", "attention_core", "choice", "choices", "declare", "linear", "norm"]
