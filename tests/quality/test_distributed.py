"""Data-parallel quality runs (torchrun): 2 gloo ranks, each a shard of the global batch, train the 1-rank run."""

from __future__ import annotations

import socket
import subprocess
import sys

import pandas as pd
import pytest
import torch
import torch.multiprocessing as mp

from ablations.cli import plan_run
from ablations.config.errors import UsageError
from ablations.quality import distributed
from ablations.quality.data import load_corpus
from ablations.quality.learning_rate import arm_rate, with_rate
from ablations.quality.train import train
from ablations.runner import plan_point
from tests.quality import ranks
from tests.quality.helpers import composed

TEXT = ("The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. " * 120).encode()
STEPS = ["train.steps=8", "train.warmup=2", "train.log_interval=1", "train.eval_interval=4"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_ranks_give_the_one_rank_loss_curve(tmp_path):
    path = tmp_path / "text.txt"
    path.write_bytes(TEXT)
    cfg = composed(f"data.path={path}", *STEPS)
    quality = plan_point(cfg).quality
    arch, tc = quality.arch, with_rate(quality.train, arm_rate(quality.train, "gpt2").lr)
    torch.set_num_threads(1)
    alone = train(arch, load_corpus(str(path)), tc, 0, torch.device("cpu"))
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    mp.start_processes(ranks.trains, args=(2, _free_port(), arch, tc, str(path), queue), nprocs=2, join=True,
                       start_method="spawn")
    results = sorted(queue.get(timeout=60) for _ in range(2))
    for _, curve, tokens in results:
        assert [(m, s) for m, s, _ in curve] == [(m, s) for m, s, _ in alone.curve]
        assert [v for *_, v in curve] == pytest.approx([v for *_, v in alone.curve], rel=1e-5, abs=1e-6)
        assert tokens == alone.tokens  # the global batch's tokens, counted once
    assert results[0][1] == results[1][1]  # every rank holds the same model: the same losses, bit for bit


def test_a_rank_that_dies_is_one_line_at_the_next_collective():
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=ranks.dies, args=(r, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    line = queue.get(timeout=120)
    for p in procs:
        p.join(timeout=60)
    assert line.startswith("rank 0 of 2 lost the others at a collective: ") and "\n" not in line, line


def test_outside_torchrun_everything_is_the_single_process():
    rows = torch.arange(12).reshape(6, 2)
    assert distributed.world_size() == 1 and distributed.is_writer()
    assert torch.equal(distributed.shard(rows), rows) and distributed.from_writer("x") == "x"
    assert distributed.mean(2.5, torch.device("cpu")) == 2.5


def test_a_batch_that_does_not_divide_among_the_ranks_is_one_line(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(UsageError) as info:
        plan_run(["profile=smoke", "model=tiny"])
    assert info.value.message == ("train.batch=8 must divide evenly among the 3 torchrun processes (each rank "
                                  "trains an equal shard of the global batch)")


# Extended: the curve test above proves the training; this proves torchrun's CLI path (one writer, no timing).
@pytest.mark.extended
def test_torchrun_runs_a_sweep_with_one_writer(tmp_path):
    (tmp_path / "text.txt").write_bytes(TEXT)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "ablations", "-m",
         "variant=gpt2,rmsnorm", "profile=smoke", "model=tiny", "threads=1", "device=cpu", *STEPS,
         f"data.path={tmp_path / 'text.txt'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "torchrun runs 2 processes side by side" in proc.stdout + proc.stderr
    table = pd.read_csv(tmp_path / "sweep" / "results.csv")
    assert set(table["variant"]) == {"gpt2", "rmsnorm"} and set(table["status"]) == {"ok"}
    assert "latency_ratio" not in set(table["metric"]) and "flops" in set(table["metric"])
    assert len(list((tmp_path / "sweep" / "points").glob("*.csv"))) == 2
    assert proc.stdout.strip().splitlines()[-1] == str((tmp_path / "sweep").resolve())  # rank 0's summary only
