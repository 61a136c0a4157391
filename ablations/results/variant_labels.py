"""A variant's name, the ``variant`` of its point's rows: what differs from GPT-2's block (``variant_label``), each
choice named as its columns name it (``ablations.config.columns.name_in``)."""

from __future__ import annotations

from ablations.config.columns import name_in
from blockbench import choices, llama2_choices
from components import LLAMA2_TIES_EMBEDDINGS, ArchConfig, ModelConfig
from components.matched_params import attention_weights_saved

# What a label adds where ``match_params`` widened the FFN to its MHA version's parameters (``gqa2-matched``).
MATCHED = "-matched"


def variant_label(arch: ArchConfig, matched: bool = False) -> str:
    """A name that says what differs from the GPT-2 baseline: ``gpt2``, ``rmsnorm``, ``gqa2``, ``nobias``,
    ``llama2``, ``rope+rmsnorm``.

    Every choice Llama-2 moved (``llama2_choices``) but one at Llama-2's value names the Llama-2 block and the odd
    one out, as its choice names it: ``llama2-learned``, ``llama2-gelu``, ``llama2-mha`` (or ``-mqa``),
    ``llama2-bias`` (the leave-one-out points). A choice neither model varies (``gpt2 == llama2``) adds its name
    when moved: ``llama2+qknorm``, ``rope+qknorm``. A block whose embeddings are not its family's (GPT-2's:
    ``ModelConfig``'s default; Llama-2's: ``LLAMA2_TIES_EMBEDDINGS``) says which it has: ``llama2-bias-tied``,
    ``gpt2-untied``. ``matched`` (``match_params``) adds ``MATCHED`` where it changed the FFN (attention of other
    weights than MHA's).
    """
    suffix = MATCHED if matched and attention_weights_saved(arch) != 0 else ""
    moved = llama2_choices()
    llama = {choice.group: choice.has(arch, choice.llama2) for choice in moved}
    family = sum(llama.values()) >= len(moved) - 1
    tied = arch.model.tie_embeddings
    if tied != (LLAMA2_TIES_EMBEDDINGS if family else ModelConfig.tie_embeddings):
        suffix = ("-tied" if tied else "-untied") + suffix
    extras = [name_in(choice, arch) for choice in choices()
              if not choice.in_llama2 and not choice.has(arch, choice.gpt2)]
    if family:
        odd = [name_in(choice, arch) for choice in moved if not llama[choice.group]]
        name = "-".join(["llama2", *odd])
        return "+".join([name, *extras]) + suffix
    changed = [name_in(choice, arch) for choice in choices() if not choice.has(arch, choice.gpt2)]
    return ("+".join(changed) if changed else "gpt2") + suffix
