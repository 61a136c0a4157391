"""A candidate C++ decode-attention kernel against SDPA (issue 16, item 4): is the 90% goal within reach?

``decode_attention.cpp`` (one pass over each KV head's cache for its whole query group, online softmax) is compiled with
``torch.utils.cpp_extension.load_inline`` (needs g++ and ``pip install ninja``; once, then cached by torch) and timed
paired against MHA through SDPA and against MHA through itself, every call on the next of caches spanning 512 MiB
(``ablations.measure.kv_streams``). The model does not use this kernel: for a fair kv sweep MHA would have to run it
too. Numerically checked against ``components.kernels.reference_sdpa`` before timing.

    python scripts/decode_kernel/measure.py --threads 2
"""

from __future__ import annotations

import argparse
import statistics

import torch
from candidate import load

from ablations.measure.kv_streams import cache_bytes, caches_spanning, cycled_step
from ablations.measure.timing import time_paired
from components.kernels import folded_sdpa, reference_sdpa


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    candidate = load()

    b, h, s, d, span = 4, 16, 4096, 64, 512 << 20
    cpu = torch.device("cpu")
    q = torch.randn(b, h, 1, d)
    mha_caches = caches_spanning(span, b, h, s, d)
    mha_bytes = cache_bytes(mha_caches[0])
    baselines = {"MHA via SDPA": cycled_step(reference_sdpa, q, mha_caches, s - 1),
                 "MHA via candidate": cycled_step(candidate, q, mha_caches, s - 1)}
    print(f"decode attention, batch {b}, context {s}, {h} heads of {d}, fp32, {args.threads} threads; "
          "bandwidth of each path / its baseline's, median [p25, p75] over paired rounds")
    for kv in (16, 8, 4, 2, 1):
        caches = caches_spanning(span, b, kv, s, d)
        k, v = caches[0]
        err = (candidate(q, k, v, s - 1) - reference_sdpa(q, k, v, s - 1)).abs().max().item()
        assert err < 1e-5, f"candidate differs from SDPA by {err} at {kv} KV heads"
        paths = {"candidate": candidate} | ({"folded SDPA": folded_sdpa} if kv < h else {})
        for name, path in paths.items():
            for base_name, base in baselines.items():
                if kv == h and name == "candidate" and base_name == "MHA via candidate":
                    continue
                paired = time_paired(cycled_step(path, q, caches, s - 1), base, rounds=args.rounds,
                                     min_run_time=0.1, warmup=2, device=cpu)
                kv_bytes = cache_bytes(caches[0])
                ratio = [(kv_bytes / a) / (mha_bytes / m) for a, m in zip(paired.a, paired.b, strict=True)]
                q1, _, q3 = statistics.quantiles(ratio, n=4, method="inclusive")
                print(f"{kv:>3} KV heads, {name:>11}: {kv_bytes / statistics.median(paired.a) / 1e9:5.1f} GB/s, "
                      f"{statistics.median(ratio):.2f} [{q1:.2f}, {q3:.2f}] of {base_name} "
                      f"({mha_bytes / statistics.median(paired.b) / 1e9:.1f} GB/s)")


if __name__ == "__main__":
    main()
