"""The linear layers' additive bias, a design choice with no module of its own: the layers read ``arch.bias``.

GPT-2 has a bias on every linear layer (``on``), Llama-2 none (``off``). LayerNorm's shift is part of LayerNorm's
definition and stays with ``norm=layernorm``; RMSNorm has none. So ``bias=off`` with LayerNorm is "no linear
biases", and the norm sweep keeps measuring only the norm.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.choice import Choice, Claim
from components.declarations import declare
from components.registry import Registry

# Both values build nothing: attention and the FFNs pass ``arch.bias.enabled`` to ``nn.Linear``.
BIASES: Registry[None] = Registry("bias.name")
BIASES.add("on", None)
BIASES.add("off", None)


@dataclass
class BiasConfig:
    name: str = "on"  # on | off

    @property
    def enabled(self) -> bool:
        return self.name == "on"


BIAS = declare(Choice(
    display={"on": "biases", "off": "none"},
    group="bias", title="linear biases", config=BiasConfig, registry=BIASES, gpt2="on", llama2="off",
    hook="flag", order=50, rung=5,
    about={"on": "a bias on every linear layer (and LayerNorm's shift)",
           "off": "no bias on the linear layers (LayerNorm keeps its shift)"},
    claim=Claim(
        "Linear layers need no bias: dropping them costs no quality and saves parameters and time",
        (("Chowdhery et al. 2022 (PaLM), §2",
          "no biases in dense kernels or layer norms: \"increased training stability for large models\" "
          "(no loss figure)"),
         ("Touvron et al. 2023 (Llama-2)", "no biases; the effect is not ablated")),
        loss="no worse", performs="as well as with biases",
        why="; a bias is one vector per matrix, so the {params} are all it can save in bytes",
    ),
))
