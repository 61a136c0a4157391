"""Bad input: each is one line on stderr and an exit status, never a traceback, before any work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ablations import cli

RUN_KEYS = ("model, pos, norm, ffn, attn, profile, train, data, measure, match_params, sweep_name, device, dtype, "
            "compile, threads, seed, out, allow_parallel_timing")
TRAIN_KEYS = ("name, enabled, seeds, steps, batch, context, lr, lr_min_ratio, warmup, weight_decay, clip, "
              "log_interval, eval_interval, eval_batches, extrapolation, position_buckets, d_model, n_layers, "
              "n_heads, n_kv_heads")
MODEL_KEYS = "d_model, n_layers, n_heads, max_seq_len, vocab_size, bias, tie_embeddings, init_std, gqa_kv_heads"


@pytest.fixture
def cli_result(capsys, monkeypatch):
    """(exit status, stderr lines) of ``python -m ablations ARGV``, which must stop before any work."""

    def started() -> None:
        raise AssertionError("the input was not refused: Hydra was about to run it")

    monkeypatch.setattr(cli, "hydra_main", started)
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main() hands its arguments to Hydra through sys.argv
    return lambda argv: _stopped(argv, capsys)


def _stopped(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    code = stop.value.code
    err = capsys.readouterr().err
    return code, err.strip().splitlines()


# (arguments, the whole stderr line after "ablations: error: "; {tmp} is the test's folder)
BAD_INPUT = {
    "unknown top-level key": (
        ["+no_such_key=1"],
        f"Could not add '+no_such_key=1'; Key 'no_such_key' not in 'RunConfig' (allowed keys: {RUN_KEYS}); "
        "+sweep=NAME adds a sweep"),
    "typo of a nested key": (
        ["+train.step=100"],
        f"Could not add '+train.step=100'; Key 'step' not in 'TrainConfig' (allowed keys: {TRAIN_KEYS})"),
    "typo under model": (
        ["+model.dmodel=3"],
        f"Could not add '+model.dmodel=3'; Key 'dmodel' not in 'ModelSizes' (allowed keys: {MODEL_KEYS})"),
    "a new subtree": (
        ["+model.x.y=1"],
        f"Could not add '+model.x.y=1'; Key 'x' not in 'ModelSizes' (allowed keys: {MODEL_KEYS})"),
    "++ adds too": (
        ["++train.stepz=1"],
        f"Could not add '++train.stepz=1'; Key 'stepz' not in 'TrainConfig' (allowed keys: {TRAIN_KEYS})"),
    "unknown key swept with -m": (
        ["-m", "+train.stp=1,2"],
        f"Could not add '+train.stp=1'; Key 'stp' not in 'TrainConfig' (allowed keys: {TRAIN_KEYS})"),
    "a misspelt sweep group": (
        ["+sweeps=norm"],
        f"Could not add '+sweeps=norm'; Key 'sweeps' not in 'RunConfig' (allowed keys: {RUN_KEYS}); "
        "+sweep=NAME adds a sweep"),
    "unknown key in the sweep file's points": (
        ["+sweep=norm", "+profile.round=3"],
        "Could not add '+profile.round=3'; Key 'round' not in 'ProfileConfig' (allowed keys: name, shapes, rounds, "
        "min_run_time, warmup, decode_contexts, decode_batch_sizes, decode_rounds, prefill_max_tokens, "
        "peak_matmul_n, forward, train_step, decode, flops, memory)"),
}


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("not a folder\n")
    return tmp_path


@pytest.mark.parametrize("args,line", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_line_and_exit_2(args, line, tmp, cli_result):
    argv = [a.format(tmp=tmp) for a in args]
    if not any(a.startswith(("hydra.sweep.dir", "hydra.run.dir")) for a in argv):
        argv += [f"hydra.sweep.dir={tmp}/sweep", f"hydra.run.dir={tmp}/run"]
    assert cli_result(argv) == (2, [f"ablations: error: {line.format(tmp=tmp)}"])
    assert not (tmp / "sweep").exists() and not (tmp / "run").exists()  # nothing ran


@pytest.mark.parametrize("args,points", [
    (["+sweep=norm"], 2),  # a config group is not a key
    (["+hydra.job.env_set.BLOCKBENCH_X=1"], 1),  # Hydra's own keys are Hydra's business
    (["attn=gqa", "+sweep=kv"], 5),
])
def test_adding_a_group_or_a_hydra_key_stays_allowed(args, points):
    assert cli.prevalidate(args) == points
