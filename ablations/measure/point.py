"""Measure one sweep point: the variant against the GPT-2 baseline, paired, on one device and dtype.

Produces long-form rows (see ``ablations.results.store.COLUMNS``) from a ``TimingPlan``; knows nothing of Hydra.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn
from tqdm.auto import tqdm

from ablations.config.checks import Shape, parse_shape
from ablations.config.plan import TimingPlan
from ablations.config.schema import ProfileConfig
from ablations.measure import flops as F
from ablations.measure import graphs
from ablations.measure.backends import sdpa_backends
from ablations.measure.ceilings import Ceilings, run_ceilings
from ablations.measure.components_alone import measure_components
from ablations.measure.intervals import rounds_rule_of
from ablations.measure.memory import cuda_peak_bytes, parameter_bytes, saved_activation_bytes
from ablations.measure.op_count import dispatched_ops
from ablations.measure.paired_rows import add_paired, paired_with
from ablations.measure.shapes import headline_decode, headline_shape
from ablations.measure.timing import time_call
from ablations.measure.work_rows import add_backend_rows, add_ceiling_rows, add_flop_rows, add_work_rows
from ablations.results.rows import Rows, Summary
from ablations.roofline.work import mode_work
from components import ArchConfig, Decoder, KVCache, build_decoder, count_parameters, new_cache


def finite_or_raise(t: torch.Tensor, what: str) -> None:
    if not torch.isfinite(t).all():
        raise FloatingPointError(f"{what} produced NaN or inf")


class Subject:
    """A model plus the callables the harness times: inference forward and a training step."""

    def __init__(self, arch: ArchConfig, device: torch.device, dtype: torch.dtype, seed: int, compiled: bool):
        torch.manual_seed(seed)
        self.arch = arch
        self.decoder: Decoder = build_decoder(arch, device=device, dtype=dtype)
        self.params = count_parameters(self.decoder)
        self.run = torch.compile(self.decoder) if compiled else self.decoder
        # Compiled graphs traced under inference mode poison later training calls with inference
        # tensors; no_grad is the compiled path's inference mode.
        self.no_grad = torch.no_grad if compiled else torch.inference_mode

    def forward(self, x: torch.Tensor) -> Callable[[], torch.Tensor]:
        def fn() -> torch.Tensor:
            with self.no_grad():
                return self.run(x)
        return fn

    def train_step(self, x: torch.Tensor) -> Callable[[], None]:
        def fn() -> None:
            # Forward and backward of a scalar loss; the optimiser step is not part of the block's cost.
            self.run(x).float().square().mean().backward()
            self.decoder.zero_grad(set_to_none=True)
        return fn


@contextmanager
def phase(rows: Rows, name: str, shape: Shape | None = None) -> Iterator[None]:
    """A ``phase_seconds`` row with the wall time the block took (``mode`` names the phase): where a point's
    minutes go, so that a faster sweep is found where the time is, not guessed."""
    began = time.perf_counter()
    try:
        yield
    finally:
        rows.add("phase_seconds", time.perf_counter() - began, "s", mode=name, shape=shape, statistic="wall")


@contextmanager
def _progress(total: int, desc: str) -> Iterator[Callable[[str], None]]:
    bar = tqdm(total=total, desc=desc, leave=False, disable=not sys.stderr.isatty(), unit="step")
    try:
        yield lambda note: (bar.set_postfix_str(note), bar.update(1))
    finally:
        bar.close()


def measure_point(plan: TimingPlan, rows: Rows) -> None:
    """Every measurement family the profile enables, appended to ``rows``."""
    p, arch, timing, compiled = plan.profile, plan.pair.arch, plan.timed, plan.machine.compile
    device, dtype = plan.machine.device, plan.machine.dtype
    # The update inside the phase: its row is added on leaving, so it carries the parameter counts too.
    with phase(rows, "build"):
        variant = Subject(arch, device, dtype, plan.seed, compiled)
        baseline = Subject(plan.pair.baseline, device, dtype, plan.seed, compiled)
        rows.base.update(params=variant.params, params_baseline=baseline.params,
                         baseline_kv_heads=baseline.arch.n_kv_heads)
    rows.add("params", variant.params, "count")
    rows.add("param_bytes", parameter_bytes(variant.decoder), "B")
    shapes = [parse_shape(s, "profile.shapes") for s in p.shapes]
    decode_points = ([(context, batch) for context in p.decode_contexts for batch in p.decode_batch_sizes]
                     if p.decode else [])
    steps = len(shapes) * (int(p.forward) + int(p.train_step) + int(p.flops) + int(p.memory)) + len(decode_points)
    timed = dict(rounds=p.rounds, min_run_time=p.min_run_time, warmup=p.warmup, device=device)
    headline = Shape(*headline_shape((s.batch, s.seq) for s in shapes)) if shapes else None

    ceilings = None
    if timing:
        buffer = int(p.bandwidth_buffer_mib) << 20
        with phase(rows, "ceilings"):  # the run's: measured at its first timed point, then carried
            ceilings = run_ceilings(dtype, int(p.peak_matmul_n), buffer, **timed)
        add_ceiling_rows(rows, ceilings, int(p.peak_matmul_n), buffer)
    peak = ceilings.matmul_peak if ceilings and p.flops else None
    elem = torch.empty((), dtype=dtype).element_size()
    ctx = dict(elem=elem, ceilings=ceilings)

    with _progress(steps, f"{rows.base['variant']}") as tick:
        for shape in shapes:
            tokens = shape.batch * shape.seq
            x = torch.randn(shape.batch, shape.seq, arch.model.d_model, device=device, dtype=dtype)
            # The first forward at a shape compiles it under compile=true, so it is timed apart here.
            first_forward = time_call(variant.forward(x), device)
            finite_or_raise(first_forward[0], "the variant's forward")
            latency: dict[str, Summary] = {}
            for mode, enabled, make in (("forward", p.forward, Subject.forward),
                                        ("train", p.train_step, Subject.train_step)):
                if not enabled:
                    continue
                with phase(rows, mode, shape):
                    if timing:
                        if compiled:
                            seconds = first_forward[1] if mode == "forward" else time_call(make(variant, x), device)[1]
                            rows.add("first_call_time", seconds, "s", mode=mode, shape=shape,
                                     note="includes torch.compile for this shape")
                        rule = rounds_rule_of(p, headline=shape == headline)
                        paired = paired_with(rule, make(variant, x), make(baseline, x),
                                             **{k: v for k, v in timed.items() if k != "rounds"})
                        latency[mode] = add_paired(rows, "", mode, shape, paired, tokens, rule)
                    if shape == shapes[0]:
                        add_backend_rows(rows, mode, sdpa_backends(make(variant, x)))
                    add_work_rows(rows, mode, shape, variant.arch, baseline.arch, latency=latency.get(mode), **ctx)
                tick(f"{mode} {shape}")
            if timing and p.components and shape == headline:
                with phase(rows, "components", shape):
                    rule = rounds_rule_of(p, headline=True)
                    kept = {k: v for k, v in timed.items() if k != "rounds"}
                    measure_components(rows, variant.arch, baseline.arch, shape, device, dtype,
                                       lambda a, b, rule=rule, kept=kept: paired_with(rule, a, b, **kept), rule,
                                       ceilings)
            if p.flops:
                with phase(rows, "flops", shape):
                    # Counted as executed; the design's from the work model (less where a window's mask hides keys).
                    for mode, make in (("forward", Subject.forward), ("train", Subject.train_step)):
                        design = mode_work(arch, mode, shape.batch, shape.seq).flops
                        add_flop_rows(rows, mode, shape, design, F.count_flops(make(variant, x)), "exact",
                                      latency.get(mode), peak)
                tick(f"flops {shape}")
            if p.memory:
                with phase(rows, "memory", shape):
                    step = variant.train_step(x)
                    rows.add("activation_bytes", saved_activation_bytes(variant.decoder, step), "B", mode="train",
                             shape=shape)
                    peak_bytes = cuda_peak_bytes(step, device)
                    if peak_bytes is not None:
                        rows.add("peak_memory_bytes", peak_bytes, "B", mode="train", shape=shape)
                tick(f"memory {shape}")
        decode_headline = headline_decode((batch, context) for context, batch in decode_points)
        for i, (context, batch) in enumerate(decode_points):
            _measure_decode(rows, variant, baseline, context, batch, p, device, dtype, timing, ceilings,
                            record_backends=i == 0, headline=(batch, context) == decode_headline)
            tick(f"decode {batch}x{context}")


def _fill_cache(decoder: Decoder, batch: int, context: int) -> KVCache:
    cache = decoder.new_cache(batch, context + 1)
    cache.randomize_()  # spares a prefill of `context` tokens
    cache.pos = context
    return cache


def _renew_storage(model: nn.Module) -> None:
    """Move every parameter and buffer to newly allocated memory, values unchanged.

    The Parameter objects stay the same, so optimisers, hooks and compiled graphs (which guard on
    metadata, not addresses) keep working.
    """
    with torch.no_grad():
        for t in itertools.chain(model.parameters(), model.buffers()):
            t.data = t.data.clone()


def _measure_decode(rows: Rows, variant: Subject, baseline: Subject, context: int, batch: int, p: ProfileConfig,
                    device: torch.device, dtype: torch.dtype, timing: bool, ceilings: Ceilings | None = None,
                    record_backends: bool = False, headline: bool = False) -> None:
    work = dict(arch=variant.arch, baseline=baseline.arch, elem=torch.empty((), dtype=dtype).element_size(),
                ceilings=ceilings)
    shape = Shape(batch, context)
    d = variant.arch.model.d_model
    subjects = (variant, baseline)
    filled = [_fill_cache(s.decoder, batch, context) for s in subjects]
    # What a cache of ``context`` positions holds: a rolling (windowed) cache keeps only its window of them.
    kv_bytes = new_cache(variant.arch, batch, context, dtype=dtype, device="meta").nbytes
    rows.add("kv_cache_bytes", kv_bytes, "B", mode="decode", shape=shape)
    prefills = batch * context <= p.prefill_max_tokens
    if not timing:
        add_work_rows(rows, "decode", shape, latency=None, **work)
        if prefills:
            add_work_rows(rows, "prefill", shape, latency=None, **work)
        return
    caches: list[KVCache | None] = list(filled)  # the finite check runs on these; every timed round on copies

    def fresh_memory(order: tuple[int, int]) -> None:
        # Decode is bound by memory traffic, so where the KV caches and the weights land matters: with
        # one placement kept for a whole run, MHA timed against itself came out 0.94 in one run and 1.04
        # in another, each with a tight spread. Fresh copies of both every round, allocated in the round's
        # order, average placement out instead of freezing one draw of it into the ratio.
        caches[:] = [None, None]  # free last round's copies before drawing new memory
        for i in order:
            _renew_storage(subjects[i].decoder)
            caches[i] = filled[i].clone()

    token = torch.randn(batch, 1, d, device=device, dtype=dtype)

    def eager_step(i: int) -> Callable[[], torch.Tensor]:
        def fn() -> torch.Tensor:
            cache = caches[i]
            cache.pos = context  # rewind: every call decodes the token at position `context`
            with subjects[i].no_grad():
                return subjects[i].run(token, cache)
        return fn

    # Decode as served (``profile.graphs``): each side's step captured once its memory is placed, replayed when timed.
    graphed = graphs.use_graphs(p.graphs, device)
    replays: list[Callable[[], torch.Tensor] | None] = [None, None]

    def fresh_graphs(order: tuple[int, int]) -> None:
        fresh_memory(order)
        replays[:] = [None, None]
        for i in order:
            replays[i] = graphs.capture(eager_step(i), device)

    def step(i: int) -> Callable[[], torch.Tensor]:
        return (lambda: replays[i]()) if graphed else eager_step(i)

    finite_or_raise(eager_step(0)(), "the variant's decode step")
    if graphed:  # a replay must compute the eager step's output before it is timed as the step
        fresh_graphs((0, 1))
        for i, what in ((0, "the variant's decode step"), (1, "the baseline's decode step")):
            graphs.check_replay(eager_step(i)(), replays[i], what)
    for name, subject, cache in (("decode_ops", variant, filled[0]), ("decode_baseline_ops", baseline, filled[1])):
        eager = cache.clone()
        eager.pos = context
        rows.add(name, dispatched_ops(lambda m=subject.decoder, c=eager: m(token, c)), "ops", mode="decode",
                 shape=shape, note="operators one eager decode step dispatches, views left out: about one kernel "
                                   "launch each")
    if record_backends:
        add_backend_rows(rows, "decode", sdpa_backends(eager_step(0)))
    timed = dict(min_run_time=p.min_run_time, warmup=p.warmup, device=device, prepare=fresh_memory)
    rule = rounds_rule_of(p, p.decode_rounds, headline=headline)
    with phase(rows, "decode", shape):
        paired = paired_with(rule, step(0), step(1), **{**timed, "prepare": fresh_graphs if graphed else fresh_memory})
    decoded = Rows(base={**rows.base, "graphs": graphed})  # every decode timing row says how the step ran
    add_work_rows(decoded, "decode", shape, latency=add_paired(decoded, "decode_", "decode", shape, paired, batch,
                                                               rule), **work)
    rows.rows.extend(decoded.rows)
    if prefills:
        prompt = torch.randn(batch, context, d, device=device, dtype=dtype)

        def prefill(i: int) -> Callable[[], torch.Tensor]:
            def fn() -> torch.Tensor:
                cache = caches[i]
                cache.pos = 0
                with subjects[i].no_grad():
                    return subjects[i].run(prompt, cache)
            return fn

        if record_backends:
            add_backend_rows(rows, "prefill", sdpa_backends(prefill(0)))
        # A prefill is many times a decode step's work and steadier, and no headline reads it: the fixed rounds of
        # the forward shapes.
        rule = rounds_rule_of(p, headline=False)
        with phase(rows, "prefill", shape):
            paired = paired_with(rule, prefill(0), prefill(1), **timed)
        latency = add_paired(rows, "prefill_", "prefill", shape, paired, batch * context, rule)
        add_work_rows(rows, "prefill", shape, latency=latency, **work)
