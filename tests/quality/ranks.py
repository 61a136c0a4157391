"""What each spawned rank of tests/quality/test_distributed.py runs: kept apart from the test module so that a
rank imports torch and the training loop, not the CLI and Hydra (spawn re-imports the target's module)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from ablations.quality import distributed
from ablations.quality.data import load_corpus
from ablations.quality.train import train


def trains(rank: int, world: int, port: int, arch, tc, path: str, queue) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        result = train(arch, load_corpus(path), tc, 0, torch.device("cpu"))
        queue.put((rank, result.curve, result.tokens))
    finally:
        dist.destroy_process_group()


def dies(rank: int, port: int, queue) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    if rank == 1:
        os._exit(3)  # a rank that dies without a word, as an OOM kill does
    try:
        distributed.mean(1.0, torch.device("cpu"))
        queue.put("no error")
    except distributed.RankLost as exc:
        queue.put(str(exc))
