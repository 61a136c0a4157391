"""``norm=scalenorm`` against a written-out float64 reference, at blockbench's init, in every norm of the decoder,
and through every consumer blockbench has (``blockbench.testing.check_choice``)."""

from __future__ import annotations

import math

import torch
from blockbench_scalenorm import ScaleNorm

from blockbench import NORMS, Step, norm
from blockbench.testing import arch_with, check_choice
from components import build_decoder

D = 32


def randn(*shape: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_scalenorm_is_g_times_x_over_its_length():
    layer = NORMS.get("scalenorm")(D, eps=1e-5).double()  # as blockbench builds every norm
    with torch.no_grad():
        layer.g.fill_(0.7)
    x = randn(3, 5, D, seed=1)
    want = (0.7 * math.sqrt(D)) * x / x.pow(2).sum(-1, keepdim=True).sqrt()
    torch.testing.assert_close(layer(x), want, rtol=1e-12, atol=1e-12)
    # A vector shorter than eps is divided by eps, not by its length (no division by zero).
    tiny = torch.full((1, D), 1e-9, dtype=torch.float64)
    torch.testing.assert_close(layer(tiny), 0.7 * math.sqrt(D) * tiny / 1e-5)
    assert torch.equal(layer(torch.zeros(1, D, dtype=torch.float64)), torch.zeros(1, D, dtype=torch.float64))


def test_every_norm_of_the_decoder_is_scalenorm_at_the_papers_start():
    arch = arch_with(norm="scalenorm")
    decoder = build_decoder(arch)
    norms = [decoder.norm, *(m for b in decoder.blocks for m in (b.norm1, b.norm2))]
    assert all(type(m) is ScaleNorm and m.eps == arch.norm.eps for m in norms)
    # blockbench's init set each g to 1: g·√d = √d, the paper's start, where ScaleNorm is x / rms(x).
    assert all(torch.equal(m.g, torch.ones(1)) for m in norms)
    x = randn(2, 5, D, seed=2).float()
    torch.testing.assert_close(decoder.norm(x), torch.nn.functional.rms_norm(x, (D,), eps=0.0), rtol=1e-5, atol=1e-5)
    # One parameter per norm: the work model counts it (LayerNorm's is 2d).
    assert ScaleNorm.work(arch, Step(2, 5, 5)) == norm(D, 10, 1)


def test_a_block_with_scalenorm_trains():
    decoder = build_decoder(arch_with(norm="scalenorm", pos="rope"))
    x = torch.randn(2, 7, D)
    y = decoder(x)
    assert y.shape == x.shape and torch.isfinite(y).all()
    y.square().mean().backward()
    for m in (decoder.norm, decoder.blocks[0].norm1, decoder.blocks[1].norm2):
        assert torch.isfinite(m.g.grad).all() and m.g.grad.abs().item() > 0


def test_scalenorm_takes_every_consumer():
    check_choice("norm", ["scalenorm"])
