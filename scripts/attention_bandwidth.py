"""How fast does each attention path read its KV cache in one decode step? (issue 16, item 4)

One query token per sequence, a cache of ``--context`` keys, B sequences, 16 heads of 64: MHA's SDPA against
GQA/MQA through the SDPA reference (``enable_gqa``) and through the folded fast path, timed paired and
interleaved (``ablations.measure.timing.time_paired``). Bandwidth = K and V bytes read / time; the figure the
issue asks for is GQA's bandwidth over MHA's, the median over rounds of each round's ratio.

    python scripts/attention_bandwidth.py --threads 2
"""

from __future__ import annotations

import argparse
import statistics

import torch

from ablations.measure.timing import time_paired
from components.attention import folded_sdpa, reference_sdpa


def cache_views(batch: int, kv_heads: int, context: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """K and V as the model reads them: the first ``context`` positions of a one-longer cache."""
    k = torch.randn(batch, kv_heads, context + 1, head_dim)
    v = torch.randn(batch, kv_heads, context + 1, head_dim)
    return k[:, :, :context], v[:, :, :context]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    b, h, s, d = args.batch, args.heads, args.context, args.head_dim
    q = torch.randn(b, h, 1, d)
    mk, mv = cache_views(b, h, s, d)
    mha_bytes = 2 * mk.numel() * mk.element_size()
    timed = dict(rounds=args.rounds, min_run_time=0.1, warmup=2, device=torch.device("cpu"))
    print(f"decode attention, batch {b}, context {s}, {h} heads of {d}, fp32, {args.threads} threads")
    print(f"{'KV heads':>8} {'path':>9} {'GB/s':>7} {'MHA GB/s':>9} {'bandwidth / MHA [p25, p75]':>28}")
    for kv in [k for k in (8, 4, 2, 1) if h % k == 0]:
        gk, gv = cache_views(b, kv, s, d)
        kv_bytes = 2 * gk.numel() * gk.element_size()
        for name, path in (("reference", reference_sdpa), ("folded", folded_sdpa)):
            paired = time_paired(lambda p=path, k=gk, v=gv: p(q, k, v, s - 1), lambda: reference_sdpa(q, mk, mv, s - 1),
                                 **timed)
            ratio = [(kv_bytes / a) / (mha_bytes / m) for a, m in zip(paired.a, paired.b, strict=True)]
            quart = statistics.quantiles(ratio, n=4, method="inclusive")
            print(f"{kv:>8} {name:>9} {kv_bytes / statistics.median(paired.a) / 1e9:>7.1f} "
                  f"{mha_bytes / statistics.median(paired.b) / 1e9:>9.1f} "
                  f"{statistics.median(ratio):>10.2f} [{quart[0]:.2f}, {quart[2]:.2f}]")


if __name__ == "__main__":
    main()
