"""What a plugin may rely on (``docs/plugins.md``): the names here keep their meaning within a minor version.

A plugin declares a group with ``declare(Choice(...))`` and adds a value to a group with its registry
(``@FFNS.register("relu2")``); its modules take an ``ArchConfig`` and state their cost with ``Work``;
``blockbench.testing.check_choice`` runs the checks every built-in passes. Everything else in ``components`` and
``ablations`` may change without notice.
"""

from components import ATTENTIONS, FFNS, NORMS, POSITIONS, ArchConfig, Choice, Claim, ConfigError, ModelConfig, Registry
from components.choice import HOOKS, declare
from components.work import Step, Work

__all__ = ["ATTENTIONS", "FFNS", "HOOKS", "NORMS", "POSITIONS", "ArchConfig", "Choice", "Claim", "ConfigError",
           "ModelConfig", "Registry", "Step", "Work", "declare"]
