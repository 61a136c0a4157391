"""``baseline=llama2``: every point is paired with Llama-2's block at its sizes and seed, in timing and quality, and
every reader says which block a ratio or difference is against."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from ablations.cli import CONF_DIR, plan_run
from ablations.config.checks import arch_from, baseline_from
from ablations.quality.stats import summarize
from ablations.results.identity import point_identity
from ablations.results.variant_labels import variant_label
from blockbench import choices
from components import ArchConfig, ModelConfig
from components.baselines import BASELINES, baseline_of


def composed(*overrides: str):
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="test"):
            return compose("config", list(overrides))
    finally:
        GlobalHydra.instance().clear()


@pytest.mark.parametrize("model", ["small", "tiny", "gpt2", "llama2_7b"])
def test_the_llama2_baseline_is_what_variant_llama2_composes(model):
    """One block, two ways to reach it: the pair the measurement builds equals the point ``variant=llama2`` is."""
    point = composed(f"model={model}", "variant=llama2")
    gpt2_point = composed(f"model={model}", "baseline=llama2", "variant=gpt2")
    assert baseline_from(gpt2_point, arch_from(gpt2_point)) == arch_from(point)
    own = composed(f"model={model}", "baseline=llama2", "variant=llama2")
    assert baseline_from(own, arch_from(own)) == arch_from(own)


def test_the_gpt2_baseline_is_every_choice_at_gpt2s_value():
    cfg = composed("variant=llama2")
    base = baseline_from(cfg, arch_from(cfg))
    assert all(choice.has(base, choice.gpt2) for choice in choices())
    assert variant_label(baseline_of(ArchConfig(), "llama2", 2)) == "llama2"
    # Each baseline is the block its name names, whatever the point's own embeddings (Llama-2's untied block).
    untied = ArchConfig(model=ModelConfig(tie_embeddings=False))
    assert variant_label(baseline_of(untied, "gpt2")) == "gpt2"
    assert set(BASELINES) == {"gpt2", "llama2"}


@pytest.mark.parametrize("argv,added", [
    (["+sweep=norm", "baseline=llama2"], True),  # the norm flipped on Llama-2's block
    (["baseline=llama2"], True),
    (["+sweep=all", "baseline=llama2"], False),  # the sweep names its variants
    (["variant=rmsnorm", "baseline=llama2"], False),  # the user names the point
    (["+sweep=norm"], False),
    (["-m", "baseline=gpt2,llama2"], False),
])
def test_baseline_without_a_variant_makes_its_block_the_point(argv, added):
    jobs = plan_run(argv).jobs
    assert all("variant=llama2" in job.overrides for job in jobs) == added


def test_a_one_choice_sweep_on_llama2_has_its_baseline_as_a_point():
    sweep = plan_run(["+sweep=norm", "baseline=llama2"])
    assert len(sweep) == 2 and {job.plan.pair.baseline_name for job in sweep.jobs} == {"llama2"}
    # +sweep=modern, whose points are all on Llama-2's block, composes in test_config (test_every_sweep_composes_...).


def test_the_gpt2_baseline_leaves_point_identities_unchanged():
    plain, explicit, llama = composed(), composed("baseline=gpt2"), composed("baseline=llama2", "variant=gpt2")
    assert point_identity(plain) == point_identity(explicit)
    assert "baseline" not in point_identity(plain)
    assert point_identity(llama)["baseline"] == {"name": "llama2"}


def _quality_rows(baseline: str | None) -> pd.DataFrame:
    rows = []
    rng = np.random.default_rng(0)
    for variant, shift in (("llama2", 0.0), ("llama2+qknorm", -0.05), ("gpt2", 0.2)):
        for seed in range(3):
            rows.append({"sweep": "mine", "variant": variant, "metric": "val_loss", "mode": "final", "seed": seed,
                         "value": 3.0 + shift + 0.001 * rng.standard_normal(), "status": "ok", "unit": "nats/byte",
                         "statistic": "value", "seq_len": 128, "d_model": 128, "params": 1e6, "pos": "rope",
                         "norm": "rmsnorm", "ffn": "swiglu", "attn": "gqa", "n_kv_heads": 1, "n_heads": 4,
                         "bias": "off", "baseline": baseline})
    return pd.DataFrame(rows)


def test_quality_compares_against_the_block_the_rows_name():
    s = summarize(_quality_rows("llama2"))
    assert set(s["reference"]) == {"llama2"}
    qk = s[s["variant"] == "llama2+qknorm"].iloc[0]
    assert qk["diff"] == pytest.approx(-0.05, abs=0.01) and qk["verdict"] == "better"
    # A table from before the column: GPT-2's block.
    assert set(summarize(_quality_rows(None))["reference"]) == {"gpt2"}


def test_bad_baseline_is_one_line_before_any_work(tmp_path, capsys):
    # In-process: the command's one-line guarantee in a process of its own is test_config's and test_commands'.
    from ablations.cli import main

    assert main(["baseline=gpt3", f"hydra.run.dir={tmp_path}"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "blockbench run: error: Could not find 'baseline/gpt3' (available options in 'baseline': gpt2, llama2)"]
    assert not any(Path(tmp_path).iterdir())


# Extended: test_a_one_choice_sweep_on_llama2_has_its_baseline_as_a_point takes the same path in a quarter of the time.
@pytest.mark.slow
@pytest.mark.extended
def test_a_sweep_on_the_llama2_baseline_pairs_every_point_with_it(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ablations", "+sweep=norm", "baseline=llama2", "profile=smoke", "model=tiny",
         "threads=1", f"hydra.sweep.dir={tmp_path}"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "results.csv")
    assert set(table["variant"]) == {"llama2", "llama2-layernorm"}
    assert set(table["baseline"]) == {"llama2"}
    params = table[table["metric"] == "params"].set_index("variant")
    # Llama-2's block is its own baseline; the LayerNorm point is paired with it (parameters differ by the biases).
    assert params.loc["llama2", "value"] == params.loc["llama2", "params_baseline"]
    assert params.loc["llama2-layernorm", "params_baseline"] == params.loc["llama2", "value"]
    quality = table[(table["metric"] == "val_loss") & (table["mode"] == "final")]
    assert set(quality["baseline"]) == {"llama2"}
    report = (tmp_path / "REPORT.md").read_text()
    assert "every point here is paired with `llama2`" in report
    assert "Ratio = variant time / `llama2` time" in report
