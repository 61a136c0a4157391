"""``python -m ablations.predict.full_size``: the README's "At full size" table, predicted, in one command.

Llama-2-7B and 70B on one H100 SXM (``conf/hardware/h100_sxm.yaml``), bf16, context 4096: each choice's
predicted time as a ratio to the GPT-2 baseline at the same size, decode at batch 1 and 64 and a training step
of 4096 tokens, with what bounds it; † where weights and KV cache exceed one device's memory. The same numbers
as ``python -m ablations.predict model=...`` prints.
"""

from __future__ import annotations

import sys

import pandas as pd

from ablations.predict.__main__ import UsageError, load, scenarios
from ablations.predict.scenarios import flips
from ablations.predict.table import prediction_table
from ablations.report.formatting import markdown_table, number_word
from ablations.roofline.hardware import Hardware
from components import ArchConfig, ModelConfig, choices

MODELS = ("llama2_7b", "llama2_70b")


def row_labels(flipped: dict[str, ArchConfig]) -> dict[str, str]:
    """Each flip's row label (``LayerNorm → RMSNorm``), keyed by the variant name the predictor gave it."""
    out = {}
    for name, arch in flipped.items():
        moved = [c for c in choices() if not c.has(arch, c.gpt2)]
        if name == "llama2":
            out[name] = f"all {number_word(len(moved))} (Llama-2 block)"
        elif len(moved) == 1:
            out[name] = moved[0].flip_text(getattr(arch, moved[0].group).name)
    return out


def ratios(model: str, hardware: str = "h100_sxm") -> tuple[pd.DataFrame, Hardware, dict[str, str]]:
    """The predictions at one model size, and each flip's row label."""
    cfg = load([f"model={model}", f"hardware={hardware}", "decode.batches=[1,64]"])
    hw = Hardware.from_dict(dict(cfg.hardware))
    sizes = dict(cfg.model)
    kv = int(sizes.pop("gqa_kv_heads"))
    flipped = flips(ModelConfig(**sizes), kv, model)
    table = prediction_table(flipped, hw, [s for s in scenarios(cfg) if s.mode != "prefill"], str(cfg.dtype),
                             int(cfg.fit_context))
    return table, hw, row_labels(flipped)


def full_size_table(hardware: str = "h100_sxm") -> tuple[str, Hardware]:
    cells: dict[str, dict[str, str]] = {}
    for model in MODELS:
        table, hw, labels = ratios(model, hardware)
        for _, r in table.iterrows():
            variant = str(r["variant"])
            if variant not in labels:
                continue
            # A flip whose name carries a size (gqa8) names it in the cell: the sizes differ between models.
            name = variant if any(ch.isdigit() for ch in variant) and variant != "llama2" else ""
            column = f"{model.replace('llama2_', '').upper()} {r['scenario'].replace(', context 4,096', '')}"
            fits = " †" if r["fits"] is False else ""
            cells.setdefault(labels[variant], {})[column] = (f"{r['ratio']:.2f}× ({r['bound']})"
                                                             + (f" [{name}]" if name else "") + fits)
    frame = pd.DataFrame.from_dict(cells, orient="index")
    frame.insert(0, "choice (predicted)", frame.index)
    return markdown_table(frame.reset_index(drop=True)), hw


def main() -> int:
    try:
        text, hw = full_size_table()
    except UsageError as e:
        print(f"ablations.predict.full_size: error: {e}", file=sys.stderr)
        return 2
    print(f"Predicted on {hw.name}: {hw.source}. Efficiencies: {hw.efficiency_source}.\n")
    print(text)
    print("\n† the weights and this batch's KV cache do not fit in one device's memory (predicted for the work "
          "alone); training memory is not modelled.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
