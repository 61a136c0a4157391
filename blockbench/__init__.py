"""The one import path of the declaration API, and what a plugin may rely on (``docs/plugins.md``): the names here
keep their meaning within a minor version.

A group is declared with ``declare(Choice(...))`` (``Claim``: what it buys), a value added to a group with its
registry (``@FFNS.register("relu2")``, or a ``Registry`` of a new group's own) and described with
``choice("ffn").describe(...)``; the declared set is listed by ``choices()`` (``llama2_choices()``,
``ladder_choices()``: those Llama-2 moved). A value's class takes an ``ArchConfig``, states its cost as ``Work``
(``linear``, ``norm``, ``attention_core`` count the usual parts) and sets any of ``Traits``; an attention value says
how many K/V heads it has with ``KVHeads``; ``blockbench.testing.check_choice`` runs the checks every built-in
passes. blockbench's own harness and tests import these names from here too; the modules of ``components`` that
define them import each other directly. Everything else in ``components`` and ``ablations`` may change without
notice.
"""

# The regression check imports this module against the base revision's ``components`` too, where plugins are loaded
# into each side (``ablations.regress.trees``): each name comes from a module the base revisions it compares have.
from components import (
    ATTENTIONS,
    FFNS,
    NORMS,
    POSITIONS,
    ArchConfig,
    ConfigError,
    GeluMLP,
    LayerNorm,
    ModelConfig,
    RMSNorm,
    SwiGLU,
)
from components.choice import EVIDENCE, HOOKS, Choice, Claim
from components.declarations import choice, choices, declare, ladder_choices, llama2_choices
from components.kv_heads import CONFIGURED, ONE_IN_ALL, PER_QUERY_HEAD, KVHeads
from components.registry import Registry, Traits
from components.work import Step, Work, attention_core, linear, norm

# The built-in modules a plugin may subclass (``ffn=relu2`` is GPT-2's MLP with another activation).
__all__ = ["ATTENTIONS", "CONFIGURED", "EVIDENCE", "FFNS", "HOOKS", "NORMS", "ONE_IN_ALL", "PER_QUERY_HEAD",
           "POSITIONS", "ArchConfig", "Choice", "Claim", "ConfigError", "GeluMLP", "KVHeads", "LayerNorm",
           "ModelConfig", "RMSNorm", "Registry", "Step", "SwiGLU", "Traits", "Work", "attention_core", "choice",
           "choices", "declare", "ladder_choices", "linear", "llama2_choices", "norm"]
