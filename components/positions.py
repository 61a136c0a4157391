"""Position information: GPT-2's learned table, Llama-2's RoPE, and none at all (NoPE).

Every variant offers the same three hooks so the model never branches on the variant's name:
``embed`` acts at the input (the learned table is added there), ``rotation`` supplies what attention
applies to Q and K (RoPE's cos/sin), and ``score_bias`` what it adds to the attention scores (ALiBi's
distance penalty). ``embed`` and ``rotation`` take ``offset``, the position of the first token, which is
non-zero when decoding with a KV cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from components.choice import Choice, Claim
from components.config import ArchConfig, ConfigError, require_positive
from components.declarations import declare
from components.registry import Registry
from components.work import Step, Work

POSITIONS: Registry[type[nn.Module]] = Registry("pos.name")

# An additive bias on the attention scores: ``bias(start, t, s, device)`` for queries at start..start+t-1 over keys
# 0..s-1, shape (heads, t, s), fp32, built on ``device`` (the scores'). It must depend on a query's position i and a
# key's j only through i - j (ALiBi's does): a sliding window's cache holds only the last keys, and attention asks
# for their bias with every position shifted so that its first key is 0.
ScoreBias = Callable[[int, int, int, torch.device], torch.Tensor]


@dataclass
class PosConfig:
    name: str = "learned"
    theta: float = 10000.0
    # Meta's Llama code rotates adjacent pairs ("interleaved"); HF and litgpt rotate halves ("half"), as do the
    # Hub's Llama-2 checkpoints: the measured block's (docs/choices.md, "Llama-2's block").
    layout: str = "half"

    def check(self, arch: ArchConfig) -> None:
        if self.name != "rope":
            return
        if arch.head_dim % 2:
            raise ConfigError(f"pos=rope needs an even head size, but model.d_model/model.n_heads={arch.head_dim}")
        if self.layout not in ("half", "interleaved"):
            raise ConfigError(f"pos.layout={self.layout!r} is not allowed; choose one of: half, interleaved")
        require_positive("pos.theta", self.theta)


class Rotation(NamedTuple):
    """cos and sin of shape (seq, head_dim // 2), fp32, plus the pairing of the rotated coordinates."""

    cos: torch.Tensor
    sin: torch.Tensor
    layout: str


def check_length(seq_len: int, offset: int, max_seq_len: int) -> None:
    if offset + seq_len > max_seq_len:
        raise ConfigError(
            f"positions {offset}..{offset + seq_len - 1} exceed model.max_seq_len={max_seq_len}; "
            "raise model.max_seq_len or use shorter sequences"
        )


@POSITIONS.register("none")
class NoPositions(nn.Module):
    """NoPE: causal attention alone; a reference point that shows what the other two add."""

    # Not flipped by the predictor, sizes or regression cases (no model deploys it); not inherited (Choice.flips).
    reference_only = True
    # Whether no position past ``max_seq_len`` exists (a table): the quality model then trains at its full length
    # and cannot be evaluated past it.
    bounded_length = False

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__()
        self.max_seq_len = arch.model.max_seq_len

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        """Elementwise (a rotation, a bias on the scores) or nothing: not counted."""
        return Work()

    def embed(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        check_length(x.shape[1], offset, self.max_seq_len)
        return x

    def rotation(self, seq_len: int, offset: int = 0, device: torch.device | str = "cpu") -> Rotation | None:
        return None

    def score_bias(self) -> ScoreBias | None:
        return None


@POSITIONS.register("learned")
class LearnedPositions(NoPositions):
    """GPT-2's ``wpe``: a max_seq_len x d table added to the token embeddings. No vector exists past it."""

    bounded_length = True

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__(arch)
        self.table = nn.Embedding(arch.model.max_seq_len, arch.model.d_model)

    @classmethod
    def work(cls, arch: ArchConfig, step: Step) -> Work:
        return Work(weights=step.seq * arch.model.d_model)  # the rows looked up, the same for every sequence

    def embed(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        check_length(x.shape[1], offset, self.max_seq_len)
        pos = torch.arange(offset, offset + x.shape[1], device=x.device)
        return x + self.table(pos)


class RopeTables:
    """RoPE's cos and sin for positions 0..max_seq_len-1 at ``width``'s frequencies, ``theta^(-2i/width)``.

    Angles are computed in fp64 on the CPU whatever device asks (meta, cuda) and stored fp32 per device, in a plain
    dict rather than buffers, so ``model.to(bfloat16)`` cannot round them: in bf16, position 4000's angle would be off
    by more than a whole step of the slowest frequency. ``RotaryPositions`` holds one at the head size, MLA one at its
    decoupled RoPE key's width.
    """

    def __init__(self, width: int, theta: float, max_seq_len: int) -> None:
        steps = torch.arange(0, width, 2, dtype=torch.float64, device="cpu")
        self.inv_freq = 1.0 / (theta ** (steps / width))
        self.max_seq_len = max_seq_len
        self._tables: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def rotation(self, start: int, t: int, device: torch.device, layout: str) -> Rotation:
        """The rotation of positions ``start..start+t-1`` on ``device``."""
        if device not in self._tables:
            # Built outside inference mode even when first asked for there, so training can reuse it.
            with torch.inference_mode(False):
                pos = torch.arange(self.max_seq_len, dtype=torch.float64, device="cpu")
                angles = torch.outer(pos, self.inv_freq)
                self._tables[device] = (angles.cos().to(device, torch.float32), angles.sin().to(device, torch.float32))
        cos, sin = self._tables[device]
        return Rotation(cos[start : start + t], sin[start : start + t], layout)


@POSITIONS.register("rope")
class RotaryPositions(NoPositions):
    """RoPE (Su et al. 2021): rotate each pair of Q/K coordinates by ``pos * theta^(-2i/head_dim)``, with the
    angles of ``RopeTables`` (fp64, stored fp32, applied in fp32)."""

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__(arch)
        self.layout = arch.pos.layout
        self.tables = RopeTables(arch.head_dim, arch.pos.theta, arch.model.max_seq_len)

    def rotation(self, seq_len: int, offset: int = 0, device: torch.device | str = "cpu") -> Rotation:
        check_length(seq_len, offset, self.max_seq_len)
        return self.tables.rotation(offset, seq_len, torch.device(device), self.layout)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's head slopes, fp64 on the CPU, as the paper's code and BLOOM build them.

    For a power-of-two count n, head h = 1..n has ``2 ** (-8 * h / n)``. For any other count, the largest power of
    two below it, p, gives its p slopes, and the rest are the odd-numbered slopes of the sequence for 2p
    (``2 ** (-4 * h / p)`` for h = 1, 3, 5, ...): so 12 heads get 8's slopes then 4 of 16's, not a sequence of
    their own. (A closed form ``2 ** (-8 * h / n)`` for every n differs from BLOOM's at 6 or 12 heads.)
    """
    closest = 2 ** math.floor(math.log2(n_heads))
    heads = torch.arange(1, closest + 1, dtype=torch.float64, device="cpu")
    slopes = torch.pow(2.0, -8.0 * heads / closest)
    if closest < n_heads:
        odd = torch.arange(1, 2 * (n_heads - closest), 2, dtype=torch.float64, device="cpu")
        slopes = torch.cat([slopes, torch.pow(2.0, -4.0 * odd / closest)])
    return slopes


@POSITIONS.register("alibi")
class ALiBiPositions(NoPositions):
    """ALiBi (Press et al. 2022, "Train Short, Test Long"): no position vector and no rotation; each head's
    attention scores get ``-m_h * (i - j)`` for query position i and key position j, a penalty linear in distance.

    Slopes are the paper's (``alibi_slopes``): 2^-1 .. 2^-8 for 8 heads. The bias depends only on absolute
    positions (start..start+t-1 for the queries, 0..s-1 for the keys), so a chunk or a single token decoded through
    the KV cache gets exactly the rows of the full sequence's bias: cached keys need nothing recomputed.
    """

    def __init__(self, arch: ArchConfig) -> None:
        super().__init__(arch)
        # On the CPU whatever device the module is built on (meta, cuda), in fp64, then stored fp32: exact for
        # powers of two, one rounding otherwise.
        self.slopes = alibi_slopes(arch.model.n_heads).to(torch.float32)
        # A plain dict, not a buffer: ``model.to(bfloat16)`` must not round the slopes; filled per device.
        self._slopes: dict[torch.device, torch.Tensor] = {}

    def _slopes_on(self, device: torch.device) -> torch.Tensor:
        if device not in self._slopes:
            # Built outside inference mode even when first asked for there, so training can reuse it.
            with torch.inference_mode(False):
                self._slopes[device] = self.slopes.to(device, copy=True)
        return self._slopes[device]

    def score_bias(self) -> ScoreBias:
        return self.distance_bias

    def distance_bias(self, start: int, t: int, s: int, device: torch.device | str = "cpu") -> torch.Tensor:
        """``-m_h * (i - j)`` of shape (n_heads, t, s), fp32 on ``device``, for i in start..start+t-1, j in 0..s-1.

        Keys after a query (j > i) get a positive value; the causal mask removes them.
        """
        device = torch.device(device)
        # Integer distances are exact in fp32 up to 2^24 positions.
        queries = torch.arange(start, start + t, dtype=torch.float32, device=device)
        keys = torch.arange(s, dtype=torch.float32, device=device)
        distance = queries[:, None] - keys[None, :]
        return -self._slopes_on(device)[:, None, None] * distance


def apply_rotation(x: torch.Tensor, rot: Rotation) -> torch.Tensor:
    """Rotate ``x`` of shape (batch, heads, seq, head_dim) in fp32 and return it in its own dtype."""
    xf = x.float()
    cos, sin = rot.cos, rot.sin
    if rot.layout == "interleaved":
        # Pairs (2i, 2i+1): Meta's complex-number form written out in reals.
        even, odd = xf[..., 0::2], xf[..., 1::2]
        out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)
    else:
        # Pairs (i, i + head_dim/2): HF's rotate_half.
        half = xf.shape[-1] // 2
        first, second = xf[..., :half], xf[..., half:]
        out = torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)
    return out.type_as(x)


def build_positions(arch: ArchConfig) -> nn.Module:
    return POSITIONS.get(arch.pos.name)(arch)


POS = declare(Choice(
    display={"learned": "learned", "rope": "RoPE", "none": "NoPE", "alibi": "ALiBi"},
    group="pos", title="positions", config=PosConfig, registry=POSITIONS, gpt2="learned", llama2="rope",
    hook="pos", order=10,
    rung=2,
    about={"learned": "a learned absolute table added at the input",
           "rope": "RoPE: Q and K rotated inside attention (`pos.layout=half|interleaved`, `pos.theta`)",
           "alibi": "ALiBi: a distance penalty on the scores (Press et al. 2022)",
           "none": "no positions (NoPE, a reference)"},
    claim=Claim(
        "RoPE extends to longer contexts more gracefully",
        (("Press et al. 2022 (ALiBi), Table 3", "rotary ppl 19.33 at L=1024 → 31.17 at 2024 → 106.99 at 16024"),),
        evidence="extrapolation",
    ),
    value_claims={"alibi": Claim(
        "ALiBi trains short and tests long: it extrapolates past its training length",
        (("Press et al. 2022, abstract",
          "a 1.3B model trained on 1024 tokens extrapolates to 2048 with the perplexity of a sinusoidal model trained "
          "on 2048, training 11% faster with 11% less memory"),
         ("Press et al. 2022, Table 3", "ALiBi ppl 19.31 at L=1024 → 18.40 at 2048 → 18.15 at 16024 "
          "(rotary: 19.33 → 31.17 → 106.99)")),
        evidence="extrapolation",
    )},
))
