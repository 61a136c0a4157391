"""The sizes every regression case is timed at: those of the pytest-benchmark suite (``tests/benchmarks``), a d=512
block at 256 tokens, where one thread spends its time in the math and one call takes milliseconds."""

from __future__ import annotations

D_MODEL, N_HEADS, MAX_SEQ_LEN = 512, 8, 2304
BLOCK_SHAPE = FFN_SHAPE = (1, 256)
ATTN_SHAPE = (1, 512)  # longer than the block's, so the SDPA core is a visible share of attention
POS_SHAPE = (1, 1024)
NORM_SHAPE = (512, 1024)  # (rows, width): the unfused RMSNorm's intermediates stay inside the L3 here
DECODE_SHAPE = (4, 2048)  # (batch, context) of one decode step with a KV cache
# The one-layer model every case's block and components are sized by.
MODEL_SIZES = {"d_model": D_MODEL, "n_layers": 1, "n_heads": N_HEADS, "max_seq_len": MAX_SEQ_LEN}

# KV heads at which the block and attention are timed with GQA: the kv sweep's middle values at 8 heads.
GQA_KV_HEADS = (4, 2)
