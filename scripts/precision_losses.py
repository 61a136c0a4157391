"""Did the fast training step change what a sweep concludes? Two runs of one sweep, float32 and the fast path.

    python -m scripts.precision_losses results/reference/all_time_to_loss results/reference/all_fast_step

Reads both folders' ``results.csv`` (the same sweep, seeds and protocol; only the training step's precision differs)
and prints, as Markdown:

1. each arm's final validation loss per seed in both, their difference, and the paired mean difference with its 95%
   interval (an A/A between the precisions, per arm);
2. each comparison's Δ loss, interval and verdict in both (``ablations.quality.stats.summarize``), and whether the
   verdicts agree;
3. each multiplier and its known answers in both (``ablations.quality.worth``), and whether the known answers hold.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ablations.quality.inference import mean_ci
from ablations.quality.stats import summarize
from ablations.quality.worth import worth
from ablations.results.table import load


def finals(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[(table["metric"] == "val_loss") & (table["mode"] == "final") & (table["status"] == "ok")]
    return rows.drop_duplicates(["variant", "seed"]).set_index(["variant", "seed"])["value"].astype(float)


def per_seed(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    fa, fb = finals(a), finals(b)
    both = fa.index.intersection(fb.index)
    lines = ["| arm | seeds | float32 − fast, per seed (nats/byte) | mean [95%] | largest |", "|---|---|---|---|---|"]
    for variant in dict.fromkeys(v for v, _ in both):
        seeds = sorted(s for v, s in both if v == variant)
        d = np.array([fa[(variant, s)] - fb[(variant, s)] for s in seeds])
        ci = mean_ci(list(d))
        lines.append(f"| {variant} | {len(seeds)} | " + ", ".join(f"{x:+.4f}" for x in d)
                     + f" | {ci.mean:+.4f} [{ci.lo:+.4f}, {ci.hi:+.4f}] | {np.abs(d).max():.4f} |")
    return lines


def verdicts(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    def cmp(t: pd.DataFrame) -> pd.DataFrame:
        s = summarize(t)
        return s[(s["metric"] == "val_loss") & (s["verdict"] != "baseline")].set_index("variant")

    sa, sb = cmp(a), cmp(b)
    lines = ["| variant | seeds | Δ float32 [CI] | verdict | seeds | Δ fast [CI] | verdict | same verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for v in sa.index.intersection(sb.index):
        ra, rb = sa.loc[v], sb.loc[v]
        lines.append(f"| {v} | {int(ra['n'])} | {ra['diff']:+.3f} [{ra['diff_lo']:+.3f}, {ra['diff_hi']:+.3f}] | "
                     f"{ra['verdict']} | {int(rb['n'])} | {rb['diff']:+.3f} [{rb['diff_lo']:+.3f}, "
                     f"{rb['diff_hi']:+.3f}] | {rb['verdict']} | {'yes' if ra['verdict'] == rb['verdict'] else 'NO'} |")
    return lines


def multipliers(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    wa, wb = worth(a).set_index("variant"), worth(b).set_index("variant")
    lines = ["| variant | k float32 | k fast | time to loss float32 | time to loss fast | known answer holds |",
             "|---|---|---|---|---|---|"]
    for v in wa.index.intersection(wb.index):
        ra, rb = wa.loc[v], wb.loc[v]
        holds = "—" if pd.isna(rb["expected"]) else (f"{'yes' if ra['calibrated'] else 'NO'} / "
                                                     f"{'yes' if rb['calibrated'] else 'NO'}")
        lines.append(f"| {v} | {ra['k_steps_text']} | {rb['k_steps_text']} | {ra['ttl_text']} | {rb['ttl_text']} | "
                     f"{holds} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.strip())
        return 2
    a, b = (load(Path(p)) for p in args)
    print("\n".join(["### Final loss per seed", "", *per_seed(a, b), "", "### Verdicts", "", *verdicts(a, b), "",
                     "### Multipliers (in steps) and time to loss", "", *multipliers(a, b)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
