"""``python -m ablations.predict.full_size``: the README's "At full size" tables, predicted, in one command.

Three tables, every number predicted (the roofline model of ``ablations.roofline`` on datasheet ceilings and
published efficiencies), bf16, LM head included:

1. **GPT-2's block, one choice at a time**: Llama-2-7B and 70B on one H100 SXM (``conf/hardware/h100_sxm.yaml``),
   context 4096: each flip's predicted time as a ratio to the GPT-2 baseline at the same size, decode at batch 1
   and 64 and a training step of 4096 tokens, with what bounds it; † where weights and KV cache exceed one device's
   memory. Its rows are every declared ``Choice.flips`` value.
2. **What came after Llama-2, on Llama-2's block**: at Llama-2-7B and 70B, each ``Choice.after_llama2`` value and
   each ``Choice.setting_flips`` entry (at its full-size value: the window is Mistral-7B's 4096) against Llama-2's
   block at the same size; at Mistral-7B's sizes only what makes Llama-2's block into Mistral-7B (its window), so
   that row *is* Mistral-7B against itself without the window. Decode at batch 1 and 64, contexts 4096 and 32768
   on one H100 SXM: Llama-2 was published at 4096 tokens, so its 32768 columns raise ``model.max_seq_len`` for the
   prediction (a counterfactual context, said under the table).
3. **Memory**: the KV cache per token and per sequence at each context, and the largest batch whose cache fits
   beside the weights on one H100 SXM (80 GB) and one H200 (141 GB) at each context; training memory and
   activations are not modelled.

The same numbers as ``python -m ablations.predict model=... decode.contexts=[4096,32768] extend_context=true``.
"""

from __future__ import annotations

import argparse
import sys

from ablations.config.errors import command, prog
from ablations.predict.after_llama2 import AFTER_LLAMA2_MODELS, at_size
from ablations.predict.full_size_notes import notes
from ablations.predict.full_size_tables import after_llama2_table, full_size_table, memory_table


@command("full-size")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=prog("full-size"), description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    parser.parse_args(argv)
    text, hw = full_size_table()
    sizes = [at_size(m) for m in AFTER_LLAMA2_MODELS]
    print(f"Predicted on {hw.name}: {hw.source}. Efficiencies: {hw.efficiency_source}.\n")
    print(text)
    print("\n† the weights and this batch's KV cache do not fit in one device's memory (predicted for the work "
          "alone); training memory is not modelled.")
    print(f"\nOn Llama-2's block (predicted, {hw.name}): Llama-2's block at each size, then each choice that came "
          "after it alone on it, as a ratio to that block's time; † as above.\n")
    print(after_llama2_table(sizes))
    print("\nKV cache and the largest batch whose cache fits beside the weights (predicted; bf16; activations and "
          "training memory not modelled; 0: the weights alone do not fit):\n")
    print(memory_table(sizes))
    print()
    print("\n\n".join(notes(sizes)))  # one paragraph each, where markdown renders them
    return 0


if __name__ == "__main__":
    sys.exit(main())
