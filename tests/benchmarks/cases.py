"""What the benchmarks time: sizes, and each sweep's variants derived from the declared choices.

Benchmark names are the key a saved baseline is compared on; they are the values' and variants' own names
(``norm=rmsnorm``, ``all``'s ``llama2``), so they change only when a declaration does, and a new choice or value
is benchmarked without an edit here. The sweeps mirror ``+sweep=NAME`` at a size where one thread spends its time
in the math (a d=512 block at 256 tokens runs at ~85% of the measured single-thread matmul peak here) and one call
takes tens of ms.
"""

from __future__ import annotations

from ablations.config.generated_sweeps import sweeps
from ablations.config.generated_variants import all_variants, modern
from ablations.regress.architecture import split_overrides
from blockbench import choice, choices
from components import ArchConfig, ModelConfig

D_MODEL = 512
N_HEADS = 8  # heads of 64, as GPT-2 and Llama-2
GQA_KV_HEADS = 2  # 4 query heads per KV head
MAX_SEQ_LEN = 2304  # room for the decode context plus one token

# (batch, seq) of the forward and forward+backward benchmarks.
BLOCK_SHAPE = (1, 256)
FFN_SHAPE = (1, 256)
ATTN_SHAPE = (1, 512)  # longer than the block's, so the SDPA core is a visible share of attention
POS_SHAPE = (1, 1024)
# (rows, width) for the norms. Not 2048 rows: there the unfused RMSNorm's intermediates (8 MB
# each) spill the L3 that this machine shares with its neighbours, so its min moves by up to 1.6x between fresh
# processes of the same code; 512 rows stay in cache and still make an op long enough to time.
NORM_SHAPE = (512, 1024)
# (batch, context) of one decode step with a KV cache.
DECODE_SHAPE = (4, 2048)



def _one_choice(group: str) -> dict[str, dict[str, object]]:
    declared = choice(group)
    return {v: ({} if v == declared.gpt2 else {group: v}) for v in declared.values}


def _named(variant: str) -> dict[str, object]:
    """A generated variant's overrides (GQA at ``GQA_KV_HEADS``)."""
    v = next(v for v in all_variants() if v.name == variant)
    groups = {declared.group for declared in choices()}
    settings = {f"{g}.{k}": x for g, kv in v.settings.items() if g in groups for k, x in kv.items()}
    return {**v.values, **settings, **({"kv": GQA_KV_HEADS} if "attn" in v.values else {})}


def _sweeps() -> dict[str, dict[str, dict[str, object]]]:
    out = {s.name: _one_choice(s.name) for s in sweeps() if s.name in {declared.group for declared in choices()}}
    # KV heads from MHA down to MQA at this size, as +sweep=kv at its own.
    out["kv"] = {f"kv{k}": {"attn": "gqa", "kv": k} for k in range(N_HEADS, 0, -1) if N_HEADS % k == 0}
    all_sweep = next(s for s in sweeps() if s.name == "all")
    out["all"] = {name: _named(name) for name in all_sweep.params["variant"].split(",")}
    # Llama-2's block and each choice after it flipped alone on it (values and setting flips), as +sweep=modern.
    out["modern"] = {v.name: _named(v.name) for v in modern()}
    return out


# sweep -> variant -> overrides of the GPT-2 baseline (keys: choice groups, their settings as ``group.key``, and kv
# for GQA's KV heads).
SWEEPS: dict[str, dict[str, dict[str, object]]] = _sweeps()

# attention variant -> n_kv_heads (None: the variant's own).
ATTENTIONS: dict[str, int | None] = {v: (GQA_KV_HEADS if v == "gqa" else None) for v in choice("attn").values}


def arch(
    kv: int | None = None,
    *,
    d_model: int = D_MODEL,
    n_heads: int = N_HEADS,
    max_seq_len: int = MAX_SEQ_LEN,
    **values: object,
) -> ArchConfig:
    """One block (n_layers=1) with the given choices at the given values (GPT-2's by default; a dotted key is a
    setting, ``attn.window``), benchmark sizes."""
    split, _ = split_overrides(values)
    groups = {g: choice(g).at_size(v, kv or 0, **s) for g, (v, s) in split.items()}
    return ArchConfig(model=ModelConfig(d_model=d_model, n_layers=1, n_heads=n_heads, max_seq_len=max_seq_len),
                      **groups)


def sweep_cases() -> list[tuple[str, str]]:
    """(sweep, variant) pairs in a stable order; the GPT-2 baseline appears in every sweep's table."""
    return [(sweep, variant) for sweep, variants in SWEEPS.items() for variant in variants]
