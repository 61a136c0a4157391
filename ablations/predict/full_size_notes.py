"""The footnotes under the full-size tables 2 and 3: the raised context, each full-size setting's source, and the
note a counterfactual flip needs (MLA on a dense block), with the mark its rows carry."""

from __future__ import annotations

from ablations.predict.after_llama2 import CONTEXTS, SHOWN, AtSize, Flip
from ablations.predict.scenarios import full_size_settings
from components.mla import mla_sizes


def marks(row: Flip) -> str:
    """‡ on a counterfactual the notes spell out (MLA on a dense block)."""
    return " ‡" if row.choice is not None and (row.choice.group, row.value) in NOTES else ""


def _mla_note(pairs: list[tuple[AtSize, Flip]]) -> str:
    """MLA's note: the counterfactual it is, and its sizes at each model, read from the rows' own configs."""
    sizes = []
    for s, r in pairs:
        m = mla_sizes(r.arch.attn, r.arch.head_dim)
        sizes.append(f"{SHOWN.get(s.model, s.model)}: kv_lora_rank {m.kv_lora_rank} + RoPE key {m.rope_dim} at "
                     f"{m.head_dim} per head")
    return ("‡ MLA is a counterfactual here: DeepSeek-V2's multi-head latent attention (arXiv 2405.04434, §2.1; its "
            "config: kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128) on Llama-2's "
            f"dense block, in DeepSeek-V2's latent proportions ({'; '.join(dict.fromkeys(sizes))}), so the cache "
            "holds that latent and key per token and layer. DeepSeek's own models are mixtures of experts, which "
            "this harness does not model.")


# Notes under tables 2 and 3 for a flip that needs one, keyed by (group, value); printed only when its row is shown.
NOTES = {("attn", "mla"): _mla_note}


def notes(sizes: list[AtSize]) -> list[str]:
    """The footnotes tables 2 and 3 need: the raised context, each full-size setting's source, and ``NOTES``."""
    out = []
    raised = [s for s in sizes if s.predicted_context > s.published_context]
    if raised:
        names = ", ".join(SHOWN.get(s.model, s.model) for s in raised)
        contexts = ", ".join(sorted({f"{s.published_context:,}" for s in raised}))
        out.append(f"§ {names}: published at {contexts} tokens; the {CONTEXTS[-1]:,}-token columns are predicted with "
                   f"model.max_seq_len raised to {CONTEXTS[-1]:,} (extend_context=true), a counterfactual context "
                   "for a model not trained that long.")
    seen: set[str] = set()
    for s in sizes:
        for row in s.rows:
            if not row.settings or row.choice is None:
                continue
            choice = row.choice
            said = ", ".join(f"{choice.group}.{k}={v}" for k, v in row.settings.items())
            # Where a full-size setting comes from: a declared setting flip's full-size value, else the published
            # model's own setting (Mistral-7B's window before attention declares it a setting flip).
            declared = [n for n in choice.setting_flips if full_size_settings(choice, n)[0] == row.settings]
            if said in seen or not (declared or row.own):
                continue
            seen.add(said)
            if declared:
                source = full_size_settings(choice, declared[0])[1]
                shown = SHOWN.get(source.replace("-", "_"), source)
                where = (f"{shown}'s own (components/presets.py cites its published config)"
                         if source != "declared" else "the declared value (no published preset here has one)")
                small = ", ".join(f"{k}={v}" for k, v in choice.setting_flips[declared[0]].items())
                out.append(f"{said} at full size: {where}; the harness's small model flips {small}.")
            else:
                out.append(f"{said}: {SHOWN.get(s.model, s.model)}'s own setting (components/presets.py cites its "
                           "published config); with it Llama-2's block at its sizes is the published model.")
    for key, note in NOTES.items():
        pairs = [(s, r) for s in sizes for r in s.rows if r.choice is not None and (r.choice.group, r.value) == key]
        if pairs:
            out.append(note(pairs))
    return out
