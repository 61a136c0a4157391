"""End-to-end sweeps in a subprocess, as a user runs them: table, resume, failure rows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ablations.cli import plan_run
from ablations.config.columns import name_in
from ablations.config.generated_variants import flips
from blockbench import choices
from components import ArchConfig, ModelConfig

pytestmark = pytest.mark.slow

# A small block so each sweep takes seconds, and no figures (none is read here: tests/report draws them); the default
# model's smoke sweep has its own test.
TINY = ["profile=smoke", "model=tiny", "model.max_seq_len=256", "threads=1", "figures=false"]


def run(args: list[str], folder: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ablations", *args, f"hydra.sweep.dir={folder}", f"hydra.run.dir={folder}"],
        capture_output=True, text=True, timeout=timeout,
    )


def assert_llama2_and_nobias_rows(table: pd.DataFrame) -> None:
    """Llama-2's block carries its choices' values; dropping the biases removes exactly model=tiny's biases."""
    llama = table[(table.variant == "llama2")].iloc[0]
    assert (llama["pos"], llama["norm"], llama["ffn"], llama["n_kv_heads"]) == ("rope-half", "rmsnorm", "swiglu", 2)
    assert not llama["bias"] and not llama["tie_embeddings"]
    nobias = table[(table.variant == "nobias") & (table.metric == "params")].iloc[0]
    gpt2 = table[(table.variant == "gpt2") & (table.metric == "params")].iloc[0]
    # model=tiny's 4 blocks (d=128, FFN 512), each with the biases of q, k, v, out (4 x 128), up (512), down (128).
    assert gpt2["value"] - nobias["value"] == 4 * (4 * 128 + 512 + 128) and nobias["params_baseline"] == gpt2["value"]


def test_smoke_norm_sweep_default_model_writes_the_table(smoke_norm_sweep):
    proc, folder = smoke_norm_sweep, smoke_norm_sweep.folder
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(folder.resolve())
    table = pd.read_csv(folder / "results.csv")
    assert set(table["variant"]) == {"gpt2", "rmsnorm"}
    assert set(table["status"]) == {"ok"}
    expected = {"params", "param_bytes", "matmul_peak", "latency", "baseline_latency", "latency_ratio",
                "throughput", "flops", "flop_rate", "utilisation", "activation_bytes", "kv_cache_bytes",
                "decode_latency", "decode_latency_ratio", "prefill_latency", "prefill_latency_ratio",
                "memory_bandwidth", "call_overhead", "bytes_moved", "arithmetic_intensity", "roofline_time",
                "roofline_ratio", "bandwidth_utilisation", "kernel_calls", "sdpa_backend_calls"}
    assert expected <= set(table["metric"])
    for column in ("sweep", "variant", "params", "seed", "device", "dtype", "threads", "torch", "git_rev",
                   "pos", "norm", "ffn", "attn", "n_kv_heads", "bias", "time"):
        assert table[column].notna().all(), column
    ratios = table[(table.metric == "latency_ratio")]
    assert (ratios["value"] > 0).all() and (ratios["lo"] <= ratios["hi"]).all()
    # Only the norm differs: parameters differ by the LayerNorm biases (3 norms x d_model).
    params = table[table.metric == "params"].set_index("variant")["value"]
    assert params["gpt2"] - params["rmsnorm"] == 3 * 1024
    # Every timed mode and shape has its roofline ratio and bandwidth utilisation beside its measured ratio.
    for metric in ("roofline_ratio", "bandwidth_utilisation"):
        modes = set(table[table.metric == metric]["mode"])
        assert modes == {"forward", "train", "decode", "prefill"}, (metric, modes)
    assert set(table[table.metric == "sdpa_backend_calls"]["note"]) <= {"flash", "math", "memory-efficient", "cudnn"}
    # Where each point's time went: every phase, per shape where it has one.
    phases = table[table.metric == "phase_seconds"]
    assert set(phases["mode"]) == {"build", "ceilings", "forward", "train", "flops", "memory", "decode", "prefill",
                                   "quality_step", "components"}
    # The norm RMSNorm swaps, timed alone beside the work it moves; the baseline swaps nothing.
    alone = table[table.metric == "component_latency_ratio"]
    assert set(alone["variant"]) == {"rmsnorm"} and set(alone["component"]) == {"norm"}
    assert (table[table.metric == "component_bytes_ratio"]["value"] < 1).all()
    # The quality model's training step, timed paired at the training shape: time to loss's denominator.
    step = table[table.metric == "quality_step_latency_ratio"]
    assert set(step["variant"]) == {"gpt2", "rmsnorm"} and (step["value"] > 0).all()
    assert (phases["value"] >= 0).all() and (phases["unit"] == "s").all()
    assert len(phases[(phases.variant == "gpt2") & (phases["mode"] == "train")]) == 2  # the smoke profile's shapes


def test_every_value_of_every_choice_runs_end_to_end(tmp_path):
    """GPT-2's block, every other value of every declared choice alone (the generated flip variants, one process:
    the one-choice sweeps and ``+sweep=all`` are these points in groups) and Llama-2's block, named as the choices
    name them; a new choice or value runs here without an edit. ``tests/ablations/test_config.py`` composes each
    ``+sweep=<group>`` and ``+sweep=all``."""
    names = ["gpt2", *(v.name for v in flips()), "llama2"]
    # One shape, one context and a few training steps a point: every path each value takes, at the least work.
    proc = run(["-m", f"variant={','.join(names)}", "sweep_name=flips", *TINY, "profile.shapes=[1x16]",
                "profile.decode_contexts=[32]", "train.steps=6", "train.eval_interval=3"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    labels = {"gpt2", "llama2",
              *(name_in(choice, ArchConfig(model=ModelConfig(n_heads=4), **{choice.group: choice.at_size(v, 2)}))
                for choice in choices() for v in choice.values[1:])}
    assert set(table["variant"]) == labels
    assert set(table["status"]) == {"ok"}
    assert_llama2_and_nobias_rows(table)


# The generated one-choice sweeps are the test above's points in groups (+sweep=norm runs in the smoke test);
# kv is a file sweep over a setting. Extended: test_config composes it into its five points, the test above runs
# its GQA path, and tests/components/test_attention.py checks MHA, GQA and MQA attention.
@pytest.mark.extended
@pytest.mark.parametrize("sweep,extra,variants", [
    # model=tiny has 4 heads, so the kv list is overridden the way the sweep file documents.
    ("kv", ["attn.n_kv_heads=4,2,1"], {"gpt2", "gqa2", "mqa"}),
])
def test_each_one_choice_sweep_runs(sweep, extra, variants, tmp_path):
    proc = run(["+sweep=" + sweep, *TINY, *extra], tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["variant"]) == variants
    assert set(table["sweep"]) == {sweep}


# Extended: the test above runs these seven points (and asserts on llama2's and nobias's rows); test_config composes
# +sweep=all. This one runs the sweep file itself.
@pytest.mark.extended
def test_all_sweep_has_baseline_flips_and_llama2(tmp_path):
    proc = run(["+sweep=all", *TINY, "profile.decode=false", "profile.shapes=[1x16]"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["variant"]) == {"gpt2", *(job.plan.pair.variant for job in plan_run(["+sweep=all", *TINY]).jobs)}
    assert {"rmsnorm", "rope", "swiglu", "gqa2", "nobias", "llama2"} < set(table["variant"])
    assert_llama2_and_nobias_rows(table)


# Extended: tests/ablations/test_points.py reruns a point in-process and finds it written.
@pytest.mark.extended
def test_interrupted_sweep_resumes_without_redoing_finished_points(tmp_path):
    args = ["-m", "ffn=gelu,swiglu", *TINY]  # two points, however many values the ffn sweep has
    assert run(args, tmp_path).returncode == 0
    points = sorted((tmp_path / "points").glob("*.csv"))
    assert len(points) == 2
    kept, lost = points
    kept_mtime = kept.stat().st_mtime_ns
    lost.unlink()  # as if the sweep died before writing this point
    proc = run(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert kept.stat().st_mtime_ns == kept_mtime
    assert lost.exists()
    assert "1 ok, 0 failed, 1 skipped" in proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["variant"]) == {"gpt2", "swiglu"}


# Extended: tests/ablations/test_points.py runs the failing point and the sweep's end in-process.
@pytest.mark.extended
def test_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    # init_std=1e30 overflows to inf and NaN: a realistic divergence, found at the first forward.
    proc = run(["-m", *TINY, "model.init_std=1e30,0.02", "profile.decode=false"], tmp_path)
    assert proc.returncode == 1
    assert "2 point(s): 1 ok, 1 failed" in proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    failed = table[table.status == "failed"]
    assert len(failed) == 1 and "NaN" in failed.iloc[0]["error"]
    assert (table.status == "ok").sum() > 10  # the other point measured everything
    assert proc.stdout.strip().splitlines()[-1] == str(tmp_path.resolve())


@pytest.mark.extended  # torch.compile's first call is most of half a minute on 2 cores
def test_compiled_point_records_first_call_and_runs(tmp_path):
    proc = run([*TINY, "compile=true", "pos=rope", "profile.shapes=[1x16]", "profile.decode=false"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert table["compile"].all()
    assert {"first_call_time", "latency_ratio", "flops"} <= set(table["metric"])
    # The first call compiles: it must be the one recorded, not a call after compilation.
    first = table[(table.metric == "first_call_time") & (table["mode"] == "forward")]["value"].iloc[0]
    steady = table[(table.metric == "latency") & (table["mode"] == "forward")]["value"].iloc[0]
    assert first > 10 * steady


# Extended: tests/ablations/test_launchers.py runs its point and its collection in-process (timing skipped, the
# parent reading outcomes from the point files); this one runs joblib's worker processes.
@pytest.mark.extended
def test_parallel_launcher_skips_timing_and_still_collects(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    proc = run(["+sweep=norm", "hydra/launcher=joblib", *TINY, "train.steps=6", "train.eval_interval=3"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "timing are SKIPPED" in proc.stdout + proc.stderr
    assert "2 point(s): 2 ok" in proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["launcher"]) == {"joblib"}
    assert not {"latency", "latency_ratio", "decode_latency"} & set(table["metric"])
    assert {"flops", "activation_bytes", "params", "kv_cache_bytes"} <= set(table["metric"])
