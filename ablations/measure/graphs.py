"""Decode as it is served: the step timed as CUDA graph replays (``profile.graphs``).

A decode step moves a few megabytes; launched eagerly, one kernel at a time, its time on a GPU is mostly the
launches' (the committed H100 run's decode reaches a few percent of the memory bandwidth), so an eager ratio
measures the launch path, not the choice. Serving stacks capture the decode step in a CUDA graph (gpt-fast compiles
it with ``mode="reduce-overhead"``; vLLM captures it) and replay it: one launch for the whole step. Here each side's
step is captured once its memory is placed (every round draws fresh memory, so every round captures again), checked
against the eager step's output before any timing, and replayed in the paired timing.

``auto`` is on for CUDA and off elsewhere (a CPU has no launch cost to remove); ``on`` without CUDA is refused at the
door. Every decode row says which ran (``graphs``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from components.config import ConfigError

SETTINGS = ("auto", "on", "off")
# Eager calls before capture: allocations and lazy initialisation (cuBLAS handles, autotuning) happen outside it.
WARM_CALLS = 3


def use_graphs(setting: str, device: torch.device) -> bool:
    """Whether decode is timed as graph replays: ``auto`` on CUDA, ``on`` (CUDA only, ``check_graphs``), ``off``."""
    return setting == "on" or (setting == "auto" and device.type == "cuda")


def check_graphs(setting: str, device: torch.device) -> None:
    """One line at the door for a setting that is not one of ``SETTINGS`` or asks for graphs without CUDA."""
    if setting not in SETTINGS:
        raise ConfigError(f"profile.graphs={setting} is not one of {', '.join(SETTINGS)} (auto: on for CUDA)")
    if setting == "on" and device.type != "cuda":
        raise ConfigError(f"profile.graphs=on needs a CUDA device; this point runs on {device.type} (auto or off "
                          "time its decode eagerly)")


def capture(step: Callable[[], torch.Tensor], device: torch.device) -> Callable[[], torch.Tensor]:
    """``step`` captured in a CUDA graph after ``WARM_CALLS`` eager calls on a side stream; returns the replay, which
    gives the step's output tensor (static: each replay overwrites it)."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(WARM_CALLS):
            step()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()

    def replay() -> torch.Tensor:
        graph.replay()
        return out
    return replay


def check_replay(eager: torch.Tensor, replay: Callable[[], torch.Tensor], what: str) -> None:
    """A replay's output equals the eager step's, or the timing stops with one line: a graph that computes something
    else would be timed as the step."""
    out = replay()
    if not torch.equal(out, eager):
        raise RuntimeError(f"{what}: the CUDA graph replay's output differs from the eager step's (max |Δ| "
                           f"{(out.float() - eager.float()).abs().max().item():.3g}); run with profile.graphs=off")
