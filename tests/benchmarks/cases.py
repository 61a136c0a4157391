"""What the benchmarks time: sizes and each sweep's variants, written out here rather than derived.

Benchmark names are the key a saved baseline is compared on, so they must not change when the library
does: the variants are spelled out instead of read from ``conf/`` or from library helpers. The sweeps
mirror ``conf/sweep/*.yaml`` at a size where one thread spends its time in the math (a d=512 block at
256 tokens runs at ~85% of the measured single-thread matmul peak here) and one call takes tens of ms.
"""

from __future__ import annotations

from components import ArchConfig, AttnConfig, BiasConfig, FFNConfig, ModelConfig, NormConfig, PosConfig

D_MODEL = 512
N_HEADS = 8  # heads of 64, as GPT-2 and Llama-2
GQA_KV_HEADS = 2  # 4 query heads per KV head
MAX_SEQ_LEN = 2304  # room for the decode context plus one token

# (batch, seq) of the forward and forward+backward benchmarks.
BLOCK_SHAPE = (1, 256)
FFN_SHAPE = (1, 256)
ATTN_SHAPE = (1, 512)  # longer than the block's, so the SDPA core is a visible share of attention
POS_SHAPE = (1, 1024)
# (rows, width) for the norms. Not DESIGN.md's 2048 rows: there the unfused RMSNorm's intermediates (8 MB
# each) spill the L3 that this machine shares with its neighbours, and its min moved 1.6x between fresh
# processes of the same code (layernorm: 5%). At 512 rows the spread was 12% and the op still ~150 us.
NORM_SHAPE = (512, 1024)
# (batch, context) of one decode step with a KV cache.
DECODE_SHAPE = (4, 2048)

# sweep -> variant -> overrides of the GPT-2 baseline (keys: pos, norm, ffn, attn, kv, bias).
SWEEPS: dict[str, dict[str, dict[str, object]]] = {
    "norm": {"layernorm": {}, "rmsnorm": {"norm": "rmsnorm"}},
    "pos": {"learned": {}, "rope": {"pos": "rope"}, "none": {"pos": "none"}},
    "ffn": {"gelu": {}, "swiglu": {"ffn": "swiglu"}},
    "bias": {"on": {}, "off": {"bias": "off"}},
    "kv": {f"kv{k}": {"attn": "gqa", "kv": k} for k in (8, 4, 2, 1)},
    "all": {
        "gpt2": {},
        "rmsnorm": {"norm": "rmsnorm"},
        "rope": {"pos": "rope"},
        "swiglu": {"ffn": "swiglu"},
        "gqa": {"attn": "gqa", "kv": GQA_KV_HEADS},
        "nobias": {"bias": "off"},
        # Llama-2's five choices; sizes stay the sweep's, as conf/variant/llama2.yaml does.
        "llama2": {"pos": "rope", "norm": "rmsnorm", "ffn": "swiglu", "attn": "gqa", "kv": GQA_KV_HEADS,
                   "bias": "off"},
    },
}

# attention variant -> n_kv_heads (None: the variant's own).
ATTENTIONS: dict[str, int | None] = {"mha": None, "gqa": GQA_KV_HEADS, "mqa": None}


def arch(
    pos: str = "learned",
    norm: str = "layernorm",
    ffn: str = "gelu",
    attn: str = "mha",
    kv: int | None = None,
    bias: str = "on",
    *,
    d_model: int = D_MODEL,
    n_heads: int = N_HEADS,
    max_seq_len: int = MAX_SEQ_LEN,
) -> ArchConfig:
    """One block (n_layers=1) with the given choices (GPT-2's by default) and the benchmark sizes."""
    return ArchConfig(
        model=ModelConfig(d_model=d_model, n_layers=1, n_heads=n_heads, max_seq_len=max_seq_len),
        pos=PosConfig(pos),
        norm=NormConfig(norm),
        ffn=FFNConfig(ffn),
        attn=AttnConfig(attn, kv),
        bias=BiasConfig(bias),
    )


def sweep_cases() -> list[tuple[str, str]]:
    """(sweep, variant) pairs in a stable order; the GPT-2 baseline appears in every sweep's table."""
    return [(sweep, variant) for sweep, variants in SWEEPS.items() for variant in variants]
