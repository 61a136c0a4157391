"""Does the time of the measured Llama-2 block depend on RoPE's layout? Its forward and forward+backward with
``pos.layout=interleaved`` (Meta's reference code) timed paired against ``half`` (the measured block's).

    python -m scripts.rope_layout_timing                  # from the repository root: 24 rounds per mode, 1 thread
    python -m scripts.rope_layout_timing --rounds 48 --out results/runs/rope_layout.json

The block is the regression check's ``block/llama2`` (``ablations.regress.cases``: one layer at d=512, 8 heads, GQA
at 2 KV heads, 1x256 tokens), built by the one definition, ``components.llama2_block``, in each layout from the same
seed. Each round renews both sides' memory and times each in this thread's CPU time, as the regression check times
a head against its base (``ablations.regress.paired.time_case``). Per mode: the median of the rounds'
interleaved/half ratios with its distribution-free interval, 95% over both modes together (Bonferroni), and the
verdict at ``--threshold``. Run it alone: another process on the cores moves the rounds. Exit status 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from ablations.config.command_start import reexec_with_tuned_malloc
from ablations.measure.intervals import fewest_rounds, median_interval
from ablations.measure.shapes import BLOCK_SHAPE, D_MODEL, GQA_KV_HEADS, MAX_SEQ_LEN, N_HEADS
from ablations.regress.paired import case_confidence, time_case, verdict
from ablations.regress.subjects import Subject, timed_call
from components import ModelConfig, build_decoder, llama2_block

# (a, b) of each pair: the ratio is interleaved / half.
LAYOUTS = ("interleaved", "half")
MODES = ("forward", "train")


def subject(layout: str, mode: str) -> Subject:
    """The regression check's Llama-2 block in ``layout``: the same weights and input whatever the layout."""
    model = ModelConfig(d_model=D_MODEL, n_layers=1, n_heads=N_HEADS, max_seq_len=MAX_SEQ_LEN)
    torch.manual_seed(0)
    decoder = build_decoder(llama2_block(model, GQA_KV_HEADS[-1], layout))
    x = torch.randn(*BLOCK_SHAPE, D_MODEL, generator=torch.Generator().manual_seed(1))
    timed = timed_call(mode, decoder, [x], list(decoder.parameters()))
    timed.state += list(decoder.buffers())
    return timed


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m scripts.rope_layout_timing", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=24, help="paired rounds per mode (default 24)")
    p.add_argument("--min-run-time", type=float, default=0.05, metavar="S",
                   help="seconds each side is timed per round (default 0.05)")
    p.add_argument("--warmup", type=int, default=3, help="calls of each side before timing (default 3)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: CPU time of this thread)")
    p.add_argument("--threshold", type=float, default=2.0, metavar="PCT", help="verdict threshold (default 2)")
    p.add_argument("--out", type=Path, help="also write every round's ratio as JSON to this file")
    args = p.parse_args(argv)
    least = fewest_rounds(case_confidence(len(MODES)))
    if args.rounds < least:
        p.error(f"--rounds={args.rounds}: at least {least} rounds give a 95% interval over {len(MODES)} modes")
    for key in ("min_run_time", "threads", "threshold"):
        if getattr(args, key) <= 0:
            p.error(f"--{key.replace('_', '-')}={getattr(args, key)} must be > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    torch.set_num_threads(args.threads)
    level = case_confidence(len(MODES))
    rows = []
    for mode in MODES:
        interleaved, half = (subject(layout, mode) for layout in LAYOUTS)
        timing = time_case(interleaved, half, rounds=args.rounds, min_run_time=args.min_run_time, warmup=args.warmup)
        iv = median_interval(timing.ratios, level)
        row = dict(case=f"block/llama2/{mode}", ratio=iv.median, lo=iv.lo, hi=iv.hi, coverage=iv.coverage,
                   verdict=verdict(iv, args.threshold / 100), interleaved_ms=statistics.median(timing.a) * 1e3,
                   half_ms=statistics.median(timing.b) * 1e3, ratios=timing.ratios)
        rows.append(row)
        print(f"{row['case']}: interleaved/half {iv.median:.4f} [{iv.lo:.4f}, {iv.hi:.4f}] ({iv.coverage:.1%}), "
              f"{row['verdict']} at ±{args.threshold:g}%; half {row['half_ms']:.2f} ms, interleaved "
              f"{row['interleaved_ms']:.2f} ms, {len(timing.ratios)} rounds, {args.threads} thread(s)", flush=True)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"threads": args.threads, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    reexec_with_tuned_malloc("scripts.rope_layout_timing")
    raise SystemExit(main())
