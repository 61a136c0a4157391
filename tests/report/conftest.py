"""A small synthetic long-form table in the store's schema: a norm and a kv sweep, plus quality rows.

The numbers are invented but shaped like the runner's (paired ratios with quartiles, FLOPs, bytes, decode
at several contexts) and the quality rows like the training run's (curves over seeds, final losses,
extrapolation with ``cannot`` for learned positions past their table).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from ablations.results.store import COLUMNS

D, HEADS = 1024, 16
PROVENANCE = dict(
    device="cpu", device_name="Test CPU (2 cores)", dtype="float32", threads=2, compile=False, launcher="basic",
    torch="2.13.0+cpu", git_rev="0123456789ab", malloc="MALLOC_MMAP_THRESHOLD_=1073741824", host="test",
    profile="default", status="ok", d_model=D, n_layers=1, n_heads=HEADS, bias=True,
)
SHAPES = [(1, 128), (1, 512), (4, 512)]
CONTEXTS = [512, 1024, 2048]
DECODE_BATCHES = [1, 4]
BASE_PARAMS = 12_596_224
# The quality model and its training shape (quality rows describe the small trained model, not the timed one).
TRAIN = dict(batch=32, seq_len=128, corpus="3f2a1b0c9d8e7f60", d_model=128, n_layers=4, n_heads=4)

# variant: sweep, pos, norm, ffn, attn, n_kv_heads, params delta
VARIANTS = {
    ("norm", "gpt2"): ("learned", "layernorm", "gelu", "mha", HEADS, 0),
    ("norm", "rmsnorm"): ("learned", "rmsnorm", "gelu", "mha", HEADS, -3 * D),
    ("kv", "gpt2"): ("learned", "layernorm", "gelu", "gqa", HEADS, 0),
    ("kv", "gqa2"): ("learned", "layernorm", "gelu", "gqa", 2, -2 * D * 64 * (HEADS - 2)),
    ("kv", "mqa"): ("learned", "layernorm", "gelu", "gqa", 1, -2 * D * 64 * (HEADS - 1)),
}
# Default speed: variant/baseline ratios (forward, train, decode); the baseline row is timed against itself.
RATIOS = {"gpt2": (1.0, 1.0, 1.0), "rmsnorm": (1.03, 1.12, 1.0), "gqa2": (0.97, 0.98, 0.62),
          "mqa": (0.95, 0.97, 0.55)}


def base_row(sweep: str, variant: str, seed: int = 0) -> dict:
    pos, norm, ffn, attn, kv, delta = VARIANTS[(sweep, variant)]
    return dict(PROVENANCE, sweep=sweep, variant=variant, point=f"{variant}-{sweep}", pos=pos, norm=norm, ffn=ffn,
                attn=attn, n_kv_heads=kv, ffn_hidden=4 * D, params=BASE_PARAMS + delta, params_baseline=BASE_PARAMS,
                seed=seed, time="2026-11-29T12:00:00+0000")


def timing_rows(sweep: str, variant: str, ratios: tuple[float, float, float]) -> list[dict]:
    base = base_row(sweep, variant)
    kv = base["n_kv_heads"]
    rows = [dict(base, metric="params", value=base["params"], unit="count", statistic="exact")]

    def interval(metric: str, ratio: float, mode: str, b: int, t: int) -> None:
        """The ratio's 95% interval row, as ``add_paired`` writes it: the half-width as the value, the bounds."""
        rows.append(dict(base, metric=metric, value=0.01, unit="fraction", mode=mode, batch=b, seq_len=t,
                         statistic="ci95", lo=ratio * 0.99, hi=ratio * 1.01, n=12, note="stopped: fixed rounds"))

    def add(metric: str, value: float, unit: str, mode: str, b: int, t: int, spread: float = 0.0, **kw) -> None:
        stat = "median" if spread else kw.pop("statistic", "exact")
        rows.append(dict(base, metric=metric, value=value, unit=unit, mode=mode, batch=b, seq_len=t, statistic=stat,
                         lo=value * (1 - spread) if spread else np.nan, hi=value * (1 + spread) if spread else np.nan,
                         n=12 if spread else np.nan, **kw))

    flops_scale = 1 - 0.25 * (HEADS - kv) / HEADS / 2  # fewer K/V projections
    for b, t in SHAPES:
        tokens = b * t
        for mode, ratio, cost in (("forward", ratios[0], 1.0), ("train", ratios[1], 3.0)):
            base_s = 2e-8 * cost * tokens * (1 + t / 2048)
            add("latency", base_s * ratio, "s", mode, b, t, spread=0.02)
            add("baseline_latency", base_s, "s", mode, b, t, spread=0.02)
            add("latency_ratio", ratio, "x", mode, b, t, spread=0.01)
            interval("ratio_interval", ratio, mode, b, t)
            add("throughput", tokens / (base_s * ratio), "tokens/s", mode, b, t, spread=0.02)
            flops = cost * 2 * tokens * 12 * D * D * flops_scale
            add("flops", flops, "FLOP", mode, b, t)
            add("utilisation", 0.4 / ratio, "fraction of matmul peak", mode, b, t, statistic="median")
        add("activation_bytes", 40 * tokens * D * (1.1 if variant == "rmsnorm" else 1.0), "B", "train", b, t)
    for ctx in CONTEXTS:
        for b in DECODE_BATCHES:
            add("kv_cache_bytes", 2 * b * ctx * kv * 64 * 4, "B", "decode", b, ctx)
            step = 1e-4 * (1 + ctx / 1024) * b
            add("decode_latency", step * ratios[2], "s", "decode", b, ctx, spread=0.03)
            add("decode_latency_ratio", ratios[2], "x", "decode", b, ctx, spread=0.01)
            interval("decode_ratio_interval", ratios[2], "decode", b, ctx)
    return rows


def quality_rows(sweep: str, variant: str, loss: float, seeds: int = 3) -> list[dict]:
    """Curves, final losses, throughput and wall time over seeds, as ``ablations.quality.run`` writes them."""
    rows = []
    rng = np.random.default_rng(zlib.crc32(f"{sweep}/{variant}".encode()))
    for seed in range(seeds):
        base = dict(base_row(sweep, variant, seed), **TRAIN)
        noise = rng.normal(0, 0.01)
        for step in range(0, 101, 20):
            curve = loss + 2.5 * np.exp(-step / 30) + noise
            for metric, extra in (("train_loss", 0.0), ("val_loss", 0.02)):
                rows.append(dict(base, metric=metric, mode="curve", step=step, value=curve + extra, unit="nats/byte",
                                 statistic="mean"))
        rows.append(dict(base, metric="val_loss", mode="final", step=100, value=loss + noise, unit="nats/byte",
                         statistic="mean"))
        rows.append(dict(base, metric="val_bpb", mode="final", step=100, value=(loss + noise) / np.log(2),
                         unit="bits/byte", statistic="mean"))
        rows.append(dict(base, metric="train_tokens_per_s", mode="quality", value=19000.0, unit="tokens/s"))
        rows.append(dict(base, metric="train_wall_time", mode="quality", value=140.0, unit="s"))
    return rows


def diverged_row(sweep: str, variant: str, seed: int) -> dict:
    return dict(base_row(sweep, variant, seed), **TRAIN, metric="val_loss", mode="final", step=40, value=np.nan,
                unit="nats/byte", statistic="diverged", status="diverged", error="loss became inf at step 40")


def extrapolation_rows(sweep: str, variant: str, losses: dict[int, float | None]) -> list[dict]:
    """``None`` is a length the variant cannot evaluate (learned positions past their table)."""
    rows = []
    for seed in range(3):
        base = dict(base_row(sweep, variant, seed), **TRAIN)
        for length, loss in losses.items():
            cannot = loss is None
            rows.append(dict(base, metric="extrap_loss", mode="extrapolation", seq_len=length,
                             value=np.nan if cannot else loss + 0.005 * seed, unit="nats/byte",
                             statistic="cannot" if cannot else "mean"))
            if cannot:
                continue
            for position in range(0, length, length // 8):
                rows.append(dict(base, metric="loss_by_position", mode="extrapolation", seq_len=length,
                                 position=position, value=loss + 0.3 * max(0, position - 128) / length + 0.01 * seed,
                                 unit="nats/byte", statistic="mean"))
    return rows


POS_VARIANTS = {("pos", "gpt2"): ("learned", "layernorm", "gelu", "mha", HEADS, 0),
                ("pos", "rope"): ("rope-half", "layernorm", "gelu", "mha", HEADS, -128 * D),
                ("pos", "none"): ("none", "layernorm", "gelu", "mha", HEADS, -128 * D)}
VARIANTS.update(POS_VARIANTS)


def make_table(ratios: dict[str, tuple[float, float, float]] | None = None, quality: bool = True,
               sweeps: tuple[str, ...] = ("norm", "kv"), failed: bool = True) -> pd.DataFrame:
    ratios = {**RATIOS, **(ratios or {})}
    rows: list[dict] = []
    for (sweep, variant) in VARIANTS:
        if sweep in sweeps and sweep != "pos":
            rows += timing_rows(sweep, variant, ratios[variant])
    if quality and "norm" in sweeps:
        rows += quality_rows("norm", "gpt2", 1.75) + quality_rows("norm", "rmsnorm", 1.74)
        rows.append(diverged_row("norm", "rmsnorm", 3))
    if quality and "pos" in sweeps:
        for variant, loss in (("gpt2", 1.60), ("rope", 1.55), ("none", 1.65)):
            rows += quality_rows("pos", variant, loss)
        rows += extrapolation_rows("pos", "gpt2", {128: 1.60, 256: None, 512: None})
        rows += extrapolation_rows("pos", "rope", {128: 1.55, 256: 1.62, 512: 1.80})
        rows += extrapolation_rows("pos", "none", {128: 1.65, 256: 1.70, 512: 1.78})
    if failed:
        rows.append(dict(base_row(sweeps[0], "gpt2"), variant="broken", metric="error", status="failed",
                         error="RuntimeError: synthetic failure"))
    return pd.DataFrame(rows, columns=COLUMNS)


@pytest.fixture(scope="session")
def synthetic() -> Callable[..., pd.DataFrame]:
    """``synthetic(ratios=..., quality=..., sweeps=...)`` -> a long-form table."""
    return make_table


def recorded_inputs():
    """The inputs a sweep of this checkout records beside its rows (``ablations.sweep.report_inputs``): what a test
    that builds a report from rows of its own passes as a sweep would have written them."""
    from ablations.sweep.report_inputs import report_inputs

    return report_inputs()
