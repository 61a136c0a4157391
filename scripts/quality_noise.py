"""The seed noise of the quality protocol: the spread of paired differences per flip, on the same seeds, under
protocol settings that change the training (common random init, the schedule's end, steps), and the validation
set's own sampling noise on each paired difference.

    python scripts/quality_noise.py --variants gpt2 rmsnorm swiglu --seeds 0-5 \\
        --protocol before:train.common_init=false,train.lr_min_ratio=0.1 \\
        --protocol crn:train.common_init=true,train.lr_min_ratio=0.1 --out /tmp/noise

Each protocol trains every variant at every seed (the first variant is the reference every other is paired
with) and writes one CSV row per run to ``OUT/runs.csv`` (appended as each finishes, so an interrupted run keeps
what it trained, and a rerun skips runs already there). Per run it records the final validation loss on the
final set (``final_eval_batches``) and on the curve's subset (``eval_batches``), the mean of the last two curve
evaluations, the CPU seconds, and the per-window final losses (``OUT/windows/*.pt``). ``--analyse OUT`` prints
the table: per protocol and flip, the sd of the paired differences over seeds for each way of scoring, and the
validation sampling standard error of a paired difference (the sd of the per-window differences over
sqrt(windows), averaged over seeds). Losses do not depend on the machine's load; CPU seconds do.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import pandas as pd
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from ablations.cli import CONF_DIR
from ablations.quality.data import open_corpus
from ablations.quality.learning_rate import arm_rate, with_rate
from ablations.quality.train import train
from ablations.quality.validation import curve_spans, validation_spans, window_losses
from ablations.quality.windows import chunk_spans
from ablations.runner import plan_point


def seeds_of(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def composed(variant: str, overrides: list[str]) -> DictConfig:
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[f"variant={variant}", *overrides])
    finally:
        GlobalHydra.instance().clear()
    OmegaConf.resolve(cfg)
    return cfg


def run(args: argparse.Namespace) -> None:
    out = args.out
    (out / "windows").mkdir(parents=True, exist_ok=True)
    table = out / "runs.csv"
    done = pd.read_csv(table) if table.exists() else pd.DataFrame(columns=["protocol", "variant", "seed"])
    torch.set_num_threads(args.threads)
    for spec in args.protocol:
        name, _, settings = spec.partition(":")
        overrides = [s for s in settings.split(",") if s]
        for seed in args.seeds:
            for variant in args.variants:
                if ((done["protocol"] == name) & (done["variant"] == variant) & (done["seed"] == seed)).any():
                    continue
                plan = plan_point(composed(variant, overrides))
                quality = plan.quality
                q = quality.arch
                tc = with_rate(quality.train, arm_rate(quality.train, plan.pair.variant).lr)  # the arm's own rate
                corpus = open_corpus(quality.data)
                spans = validation_spans(corpus, tc)
                began, cpu = time.perf_counter(), time.process_time()
                result = train(q, corpus, tc, seed, torch.device("cpu"), spans)
                wall, cpu = time.perf_counter() - began, time.process_time() - cpu
                vals = [v for m, _, v in result.curve if m == "val_loss"]
                small = [v for m, s, v in result.curve if m == "val_loss" and s < tc.steps]
                row = {"protocol": name, "settings": settings, "variant": variant, "seed": seed,
                       "steps": tc.steps, "final": result.final_val, "curve_last": small[-1] if small else math.nan,
                       "mean_last2": sum(vals[-2:]) / 2, "windows": 0 if result.final_windows is None
                       else len(result.final_windows), "wall_s": wall, "cpu_s": cpu, "threads": args.threads}
                # The curve's last evaluation before the end is on the subset; score the end on it too.
                row["final_subset"] = float(window_losses(result.lm, chunk_spans(curve_spans(spans, tc),
                                                                                   tc.context), tc.batch).mean())
                if result.final_windows is not None:
                    torch.save(result.final_windows, out / "windows" / f"{name}-{variant}-{seed}.pt")
                frame = pd.DataFrame([row])
                frame.to_csv(table, mode="a", header=not table.exists(), index=False)
                print(f"{name} {variant} seed {seed}: final {row['final']:.4f} (subset {row['final_subset']:.4f}) "
                      f"{wall:.0f} s", flush=True)


def analyse(out: Path, reference: str | None) -> str:
    runs = pd.read_csv(out / "runs.csv")
    lines = ["| protocol | flip | seeds | mean Δ (final set) | sd Δ final set | sd Δ curve subset "
             "| sd Δ mean of last 2 | validation SE of Δ | CPU s per run |", "|---|---|---|---|---|---|---|---|---|"]
    for name, p in runs.groupby("protocol", sort=False):
        base = reference or p["variant"].iloc[0]
        b = p[p["variant"] == base].set_index("seed")
        for variant, v in p[p["variant"] != base].groupby("variant", sort=False):
            v = v.set_index("seed")
            seeds = sorted(set(v.index) & set(b.index))
            if len(seeds) < 2:
                continue
            d = {k: (v.loc[seeds, k] - b.loc[seeds, k]) for k in ("final", "final_subset", "mean_last2")}
            ses = []
            for s in seeds:
                fa, fb = (out / "windows" / f"{name}-{x}-{s}.pt" for x in (variant, base))
                if fa.exists() and fb.exists():
                    w = torch.load(fa) - torch.load(fb)
                    ses.append(float(w.std() / math.sqrt(len(w))))
            se = f"{sum(ses) / len(ses):.4f}" if ses else "—"
            lines.append(f"| {name} | {base} → {variant} | {len(seeds)} | {d['final'].mean():+.4f} | "
                         f"{d['final'].std():.4f} | {d['final_subset'].std():.4f} | {d['mean_last2'].std():.4f} | "
                         f"{se} | {p['cpu_s'].median():.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=["gpt2", "rmsnorm", "swiglu"])
    parser.add_argument("--seeds", type=seeds_of, default=list(range(6)))
    parser.add_argument("--protocol", action="append", default=[], metavar="NAME:KEY=V,KEY=V")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--analyse", action="store_true", help="print the table of OUT/runs.csv and exit")
    parser.add_argument("--reference", default=None, help="the variant others are paired with (default: first)")
    args = parser.parse_args(argv)
    if not args.analyse:
        run(args)
    print(analyse(args.out, args.reference))
    return 0


if __name__ == "__main__":
    sys.exit(main())
