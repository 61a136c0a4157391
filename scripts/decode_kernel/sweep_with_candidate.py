"""Run ``python -m ablations`` with the candidate kernel (``decode_attention.cpp``) in every decode step.

An experiment, not a harness option: ``components.kernels.sdpa`` is replaced in this process so that every
one-token step on CPU float32 with 64-wide heads (MHA's as well as GQA's: one kernel on both sides of each pair)
runs the candidate (checked first against SDPA on a small decoder); prefills, forwards and training keep SDPA.
The rows' ``sdpa_backend_calls`` still say ``flash`` (the candidate is not a torch op the profiler sees): read
this folder's decode rows as the candidate's.

    python scripts/decode_kernel/sweep_with_candidate.py +sweep=kv threads=2 profile.forward=false \\
        profile.train_step=false profile.flops=false profile.memory=false hydra.sweep.dir=results/runs/kv-candidate
"""

from __future__ import annotations

import sys

import torch
from candidate import handles, load

import components.kernels as kernels
from ablations.cli import main


def install() -> None:
    decode = load()
    library = kernels.sdpa

    def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, start: int = 0) -> torch.Tensor:
        return decode(q, k, v, start) if handles(q, k, v, start) else library(q, k, v, start)

    kernels.sdpa = sdpa
    verify(library, sdpa)


def verify(library: object, candidate: object) -> None:
    """The patched decoder's decode step against SDPA's: MHA, GQA-2 and MQA, learned positions and RoPE."""
    from components import ArchConfig, AttnConfig, ModelConfig, PosConfig, build_decoder

    for attn in (AttnConfig("mha"), AttnConfig("gqa", 2), AttnConfig("gqa", 1)):
        for pos in (PosConfig("learned"), PosConfig("rope")):
            torch.manual_seed(0)
            model = build_decoder(ArchConfig(ModelConfig(d_model=256, n_layers=2, n_heads=4, max_seq_len=64),
                                             pos=pos, attn=attn))
            prompt, token = torch.randn(3, 40, 256), torch.randn(3, 1, 256)
            outputs = []
            for path in (library, candidate):
                kernels.sdpa = path
                cache = model.new_cache(3, 41)
                with torch.inference_mode():
                    model(prompt, cache)
                    cache.pos = 40
                    outputs.append(model(token, cache))
            err = (outputs[0] - outputs[1]).abs().max().item()
            assert err < 1e-5, f"candidate decode differs from SDPA by {err} ({attn.name}, {pos.name})"
    kernels.sdpa = candidate


if __name__ == "__main__":
    install()
    sys.exit(main(sys.argv[1:]))
