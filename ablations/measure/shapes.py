"""The shapes timings are read at: the headline shapes the report's speed table, the README and the claims read, and
the sizes every regression case is timed at.

The headline is declared here so that the measurement spends its precision where the report looks: the profile's
``target_halfwidth`` is held at these (``profile.target_scope=headline``), and the report picks the same cells
from a results table (``ablations.report.comparison``).

The regression sizes are those of the pytest-benchmark suite (``tests/benchmarks``): a d=512 block at 256 tokens,
where one thread spends its time in the math and one call takes milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable


def headline_shape(shapes: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """The forward/train (batch, seq) with the most tokens, ties to the longer sequence: where the matrix
    products dominate, so the ratio says most about the design and least about per-call overhead."""
    return max(shapes, key=lambda s: (s[0] * s[1], s[1]), default=None)


def headline_decode(points: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """The decode (batch, context) at the longest context, the largest batch there: where the KV cache the
    design sizes is the most of what a step reads."""
    return max(points, key=lambda p: (p[1], p[0]), default=None)


# The regression cases' sizes (``ablations.regress``).
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
