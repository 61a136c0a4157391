"""A blockbench plugin: two choices from outside blockbench, declared with the API its built-ins use.

- ``ffn=relu2``: Primer's squared-ReLU FFN (So et al. 2021), a new value of blockbench's ``ffn`` group;
- ``softcap=off|on``: Gemma-2's attention-logit soft cap, ``cap * tanh(scores / cap)`` with cap 50, a new group.

Importing this module registers both (blockbench imports it through the entry point in ``pyproject.toml``, or
``plugins=[blockbench_relu2_softcap]`` for an uninstalled copy).
"""

from blockbench_relu2_softcap import relu2, softcap

__version__ = "0.1.0"
__all__ = ["relu2", "softcap"]
