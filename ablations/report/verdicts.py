"""The verdict block: one plain sentence per choice, at the top of every REPORT.md and, from the reference, in the
README's first screen. Generated from the rows, never written by hand.

Each sentence names the choice, its cost (the train step's time ratio per device, and the decode step's where the
choice moves the KV cache) and its quality (the final loss difference and, where it is a difference, the compute
multiplier), each with its 95% interval and where it was measured. It says no more than the intervals allow:

- a time ratio whose interval holds 1 is "no measurable difference"; one wholly below 1 is "faster", above "slower";
- a loss difference is "lower" or "higher" only on the statistics' verdict (``ablations.quality.stats``: Holm-adjusted
  paired test); a difference not detected is **bounded** ("within ±m") only where its whole interval lies within the
  margin a published "no worse" is held to (``ReportInputs.no_worse_margin``, recorded beside the rows), else it
  says how large a harm the interval leaves open; a comparison with too few seeds gives its difference with "no
  interval, no verdict".

Where several sweeps measured a choice, the block reads the one ``ANSWER_SWEEPS`` prefers: each arm at its own rate
before one shared rate. Among those, the ``horizon`` sweep first, read at the horizon where k has stopped moving
(``horizon.settled_horizon``: the shortest whose k lies within the longest's interval for every choice), then the
others by how far they trained (most bytes per parameter first); else the first in the table. The report's tables
below name the others. A smoke run's block says it gives no verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ablations.quality import horizon
from ablations.quality.learning_rate import SCANNED, TUNED
from ablations.quality.worth import k_beside_verdict, training_bytes_per_param
from ablations.report.flips import flip_name, flip_order, moved
from ablations.report.formatting import signed
from ablations.report.kernel_reading import kernel_note
from ablations.report.published import GPT2, NONE
from ablations.results.row_arch import arch_from_row
from ablations.results.summary_schema import FASTER, NO_DIFFERENCE, OVERHEAD, SLOWER
from components import ArchConfig

# The sweeps whose reading is the answer: every choice on one baseline with each arm at its own rate (the horizon sweep
# at its settled horizon; the all sweep run as ``sweep_name=all_tuned`` at the committed tuned rates; ``lr_scan`` at
# the rate its own scan chose), the horizon's first and the others trained furthest (most bytes per parameter) first,
# since what a choice buys moves as training goes on; then at one shared rate (all).
TUNED_ANSWERS = (horizon.SWEEP, "all_tuned", "lr_scan")
ANSWER_SWEEPS = (*TUNED_ANSWERS, "all")
# The block's length limit: one line per choice.
MAX_LINES = 8
# Verdict words of ``ablations.quality.stats.verdict`` (its third, ``NONE``, named once in ``published``).
BETTER, WORSE = "better", "worse"
# Where a report links its terms: the docs page generated from ``ablations.report.glossary``, under the repository
# the package's metadata names (pyproject.toml's [project.urls]).
GLOSSARY_PAGE = "blob/main/docs/glossary.md"
# Where k is read against how far training went: the horizon reference at each arm's own rate.
HORIZON_PAGE = "blob/main/results/reference/horizon_tuned/README.md"
# Where the reference's answer is: the README's findings, each arm at its own rate where k has stopped moving.
ANSWER_PAGE = "blob/main/README.md#what-it-found"
# The reference report, where the README's block sends the choices past its first lines.
REFERENCE_REPORT = "blob/main/results/reference/REPORT.md"


def repository_url(page: str) -> str:
    """``page`` under the repository the package's metadata names, or its path in a checkout never installed."""
    from importlib.metadata import PackageNotFoundError, metadata

    local = page.split("/", 2)[2]
    try:
        urls = dict(u.split(", ", 1) for u in metadata("blockbench").get_all("Project-URL") or [])
    except PackageNotFoundError:
        return local
    return f"{urls['Repository'].rstrip('/')}/{page}" if "Repository" in urls else local


def glossary_url() -> str:
    return repository_url(GLOSSARY_PAGE)


SMOKE_BLOCK = "**Verdicts: none.** A smoke run checks the plumbing; its numbers are not for quoting."


@dataclass(frozen=True)
class Ratio:
    """A time ratio (variant over baseline) with its 95% interval, and the device it was measured on."""

    value: float
    lo: float
    hi: float
    device: str
    # Why the ratio may not measure the choice (a decode step far from its memory roofline measures overhead).
    note: str = ""
    # The ratio the bytes alone give (the memory roofline's), where the step is overhead-bound.
    roofline: float | None = None
    # Where a swapped component asks no more of the machine yet measures slower alone: its kernel, named
    # (``kernel_reading``); the ratio's reading stands, said beside what costs it.
    kernel: str = ""

    def cell(self) -> str:
        cell = f"{self.device} {self.value:.3f}× [{self.lo:.3f}, {self.hi:.3f}]"
        return f"{cell}; {self.note}" if self.note else cell


@dataclass(frozen=True)
class Loss:
    """A final-loss difference (variant minus baseline) with its Holm-level interval, verdict and seeds."""

    diff: float
    lo: float
    hi: float
    verdict: str
    seeds: int
    unit: str
    k: str | None  # the compute multiplier's text, where one was read
    where: str  # the regime every arm of the sweep shares: width, steps, bytes per parameter, rate protocol
    rate: str = ""  # the two arms' own rates, where each trained at its own ("lr 0.004, GPT-2 0.008")

    @property
    def regime(self) -> str:
        """The whole regime of this one comparison: the shared part and the arms' own rates."""
        return f"{self.where}, {self.rate}" if self.rate else self.where


@dataclass(frozen=True)
class Answer:
    choice: str
    order: int
    train: tuple[Ratio, ...]
    decode: tuple[Ratio, ...]
    loss: Loss | None
    timed_in: tuple[str, ...]  # the sweep each device's ratios come from
    trained_in: str | None  # the sweep the loss comes from
    variants: tuple[tuple[str, str], ...] = ()  # (sweep, variant) of every reading

    @property
    def sweeps(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.timed_in, *([self.trained_in] if self.trained_in else [])]))


# The bytes move the decode step's roofline below this ratio: a choice that saves bytes (GQA), not one that keeps them.
BYTES_FALL = 0.95


def time_kind(r: Ratio) -> str:
    """What a ratio's interval allows: "faster" (wholly below 1), "slower" (above) or "no measurable difference". An
    overhead-bound ratio (``note``) keeps its reading only where it moved the way its bytes do (faster where they
    fall); otherwise it measures the overhead, and the reading is ``OVERHEAD``."""
    kind = NO_DIFFERENCE if r.lo <= 1 <= r.hi else FASTER if r.hi < 1 else SLOWER
    if r.note and not (kind == FASTER and r.roofline is not None and r.roofline < BYTES_FALL):
        return OVERHEAD
    return kind


def time_phrase(what: str, ratios: tuple[Ratio, ...]) -> str:
    """``what`` across devices, said no more strongly than each device's interval allows."""
    kinds = {time_kind(r) for r in ratios}
    if len(kinds) == 1:
        kind = kinds.pop()
        cells = ", ".join(r.cell() for r in ratios)
        if kind == OVERHEAD:
            return f"{OVERHEAD} on {what} ({cells})"
        kernels = "".join(f"; {r.device}: {r.kernel}" for r in ratios if r.kernel)
        return (f"{kind} in {what} ({cells}{kernels})" if kind.startswith("no ")
                else f"{what} {kind} ({cells}{kernels})")
    return f"{what} " + ", ".join(f"{time_kind(r)} on {r.device} ({r.cell().split(' ', 1)[1]}"
                                  f"{'; ' + r.kernel if r.kernel else ''})" for r in ratios)


def loss_phrase(loss: Loss, margin: float) -> str:
    """The loss difference by its verdict: lower, higher, bounded within the margin, not ruled out, or no interval."""
    interval = f"Δ {signed(loss.diff)} [{signed(loss.lo)}, {signed(loss.hi)}], {loss.seeds} seeds"
    if loss.verdict == BETTER:
        worth = f"; worth {loss.k} the baseline's compute" if loss.k else ""
        return f"lower loss ({interval}{worth})"
    if loss.verdict == WORSE:
        return f"higher loss ({interval})"
    if loss.verdict == NONE and not (math.isnan(loss.lo) or math.isnan(loss.hi)):
        if max(abs(loss.lo), abs(loss.hi)) <= margin:
            return f"loss within ±{margin:g} ({interval})"
        open_end = f"a harm up to {signed(loss.hi)}" if loss.hi > margin else f"a gain up to {signed(loss.lo)}"
        return f"no detectable difference in loss ({interval}; {open_end} not ruled out)"
    return f"loss Δ {signed(loss.diff)} from {loss.seeds} seed pair(s): no interval, no verdict"


def sentence(answer: Answer, margin: float, regime: bool = True) -> str:
    """One line: the choice, its cost, its loss; ``regime``: the loss's regime too (where the block's heading does
    not name one for every line)."""
    parts = []
    if answer.train:
        parts.append(time_phrase("train step", answer.train))
    if any(time_kind(r) not in (NO_DIFFERENCE, OVERHEAD) for r in answer.decode):
        parts.append(time_phrase("decode step", answer.decode))
    if answer.loss is not None:
        at = answer.loss.regime if regime else answer.loss.rate
        parts.append(loss_phrase(answer.loss, margin) + (f" at {at}" if at else ""))
    said = "; ".join(parts) if parts else "not measured"
    return f"- **{answer.choice}**: {said} (sweep {', '.join(answer.sweeps)})."


def _device(name: object, device: object) -> str:
    """CPU, or the accelerator's short name (``NVIDIA H100 80GB HBM3`` -> ``H100``)."""
    if str(device) == "cpu" or not isinstance(name, str):
        return "CPU"
    words = name.replace("NVIDIA", "").split()
    return words[0] if words else "GPU"


def _preferred(sweeps: list[str], order: list[str], table: pd.DataFrame) -> list[str]:
    """``sweeps`` as the answer prefers them: the tuned answers (trained at each arm's own rate), the horizon sweep
    first and the others furthest trained first; the shared-rate one; then the rest in the table's order."""
    def key(sweep: str) -> tuple[int, int, float, int]:
        if sweep in TUNED_ANSWERS and _tuned(table, sweep):
            trained = _bytes_per_param(table, sweep)
            return (0, sweep != horizon.SWEEP, -(trained if math.isfinite(trained) else 0.0),
                    TUNED_ANSWERS.index(sweep))
        if sweep in ANSWER_SWEEPS and sweep not in TUNED_ANSWERS:
            return 1, 0, 0.0, ANSWER_SWEEPS.index(sweep)
        return 2, 0, 0.0, order.index(sweep) if sweep in order else len(order)
    return sorted(sweeps, key=key)


def _tuned(table: pd.DataFrame, sweep: str) -> bool:
    """Whether the sweep's arms trained at their own rates (tuned or scanned), by its rows' ``lr_source``."""
    if "lr_source" not in table:
        return False
    sources = table.loc[table["sweep"] == sweep, "lr_source"].dropna().astype(str)
    return bool(sources.str.startswith((SCANNED, TUNED)).any())


@dataclass(frozen=True)
class Reading:
    """What the answers read: the rows, the quality summary and the multipliers, the horizon sweep's restricted to
    its settled horizon (``settled``, None where it has none)."""

    table: pd.DataFrame
    summary: pd.DataFrame | None
    worth: pd.DataFrame
    settled: horizon.Settled | None


def at_settled_horizon(table: pd.DataFrame, summary: pd.DataFrame | None, worth: pd.DataFrame,
                       settled: horizon.Settled | None = None) -> Reading:
    """The horizon sweep read at one length: where k has stopped moving (``horizon.settled_horizon``), or, without
    the baseline's curve to say where, the longest it trained (a verdict never pools Δs of several lengths); every
    other sweep as it is. ``settled``: the horizon another table chose (a full-schedule run at the length the
    stand-in schedule's horizon sweep settled on), read as given."""
    rows = table[table["sweep"] == horizon.SWEEP]
    if settled is None:
        settled = (horizon.settled_horizon(worth, horizon.bytes_per_param(rows))
                   if len(rows) and summary is not None and not worth.empty else None)
    lengths = pd.to_numeric(rows["train_steps"], errors="coerce").dropna() if "train_steps" in rows else pd.Series()
    if settled is None and lengths.nunique() < 2:
        return Reading(table, summary, worth, None)
    steps = settled.steps if settled is not None else float(lengths.max())

    def keep(frame: pd.DataFrame | None) -> pd.DataFrame | None:
        if frame is None or "train_steps" not in frame:
            return frame
        at = pd.to_numeric(frame["train_steps"], errors="coerce")
        return frame[(frame["sweep"] != horizon.SWEEP) | (at == steps)]
    return Reading(keep(table), keep(summary), keep(worth), settled)


def _bytes_per_param(table: pd.DataFrame, sweep: str) -> float:
    """How far the sweep's GPT-2 arm trained: its training bytes per parameter (``worth.training_bytes_per_param``)
    at the sweep's widest quality model; NaN where it has no final loss."""
    final = table[(table["sweep"] == sweep) & (table["variant"] == GPT2) & (table["metric"] == "val_loss")
                  & (table["mode"] == "final")]
    if final.empty or "d_model" not in final:
        return math.nan
    widest = final[final["d_model"] == pd.to_numeric(final["d_model"], errors="coerce").max()]
    return training_bytes_per_param(widest) if len(widest) else math.nan


def answers(table: pd.DataFrame, cmp: pd.DataFrame, summary: pd.DataFrame | None,
            worth: pd.DataFrame, settled: horizon.Settled | None = None) -> list[Answer]:
    """One answer per flip of GPT-2's block the table measured: Llama-2's changes (alone and together) first, in the
    declarations' order, then the other choices'. ``settled``: the horizon to read the horizon sweep at, where
    another table chose it (``at_settled_horizon``)."""
    order = list(dict.fromkeys(table["sweep"].dropna().astype(str)))
    reading = at_settled_horizon(table, summary, worth, settled)
    table, summary, worth = reading.table, reading.summary, reading.worth
    names: dict[str, list[tuple[str, str]]] = {}
    orders: dict[str, int] = {}
    cores: dict[str, bool] = {}
    for (sweep, variant), rows in table.groupby(["sweep", "variant"], sort=False):
        first = rows.iloc[0]
        if _baseline(first, cmp) != GPT2 or variant == GPT2:
            continue
        arch = arch_from_row(first)
        name = flip_name(str(variant), arch)
        if name is None:
            continue
        cores[name] = _llama2s(arch)
        if str(sweep) not in dict(names.get(name, [])):  # a sweep's first variant of a choice (gqa2 before gqa4)
            names.setdefault(name, []).append((str(sweep), str(variant)))
        orders[name] = flip_order(first)
    out = []
    for name, where in names.items():
        by_sweep = dict(where)
        sweeps = _preferred(list(by_sweep), order, table)
        timed = [s for s in sweeps if not cmp.empty and ((cmp["sweep"] == s) & (cmp["variant"] == by_sweep[s])).any()]
        train, decode, used = _ratios(cmp, timed, by_sweep, table)
        loss, quality_sweep = _loss(summary, worth, table, sweeps, by_sweep, reading.settled)
        out.append(Answer(name, orders[name], tuple(train), tuple(decode), loss, tuple(used), quality_sweep,
                          tuple(by_sweep.items())))
    # Llama-2's own changes first (the block's question), then the choices that came before or after it.
    return sorted(out, key=lambda a: (not cores[a.choice], a.order))


def _llama2s(arch: ArchConfig) -> bool:
    """Whether every choice ``arch`` moves is moved to Llama-2's value (a flip the block's question asks about)."""
    return all(choice.in_llama2 and choice.has(arch, choice.llama2) for _, choice in moved(arch))


def _baseline(row: pd.Series, cmp: pd.DataFrame) -> str | None:
    """The block a variant was compared with: its rows' ``baseline``, else its timing comparison's."""
    if isinstance(row.get("baseline"), str):
        return str(row["baseline"])
    if cmp.empty:
        return None
    timed = cmp[(cmp["sweep"] == row["sweep"]) & (cmp["variant"] == row["variant"])]
    return str(timed["baseline"].iloc[0]) if len(timed) else None


def _ratios(cmp: pd.DataFrame, timed: list[str], by_sweep: dict[str, str],
            table: pd.DataFrame) -> tuple[list[Ratio], list[Ratio], list[str]]:
    """The train and decode ratios per device, each from the most preferred sweep timed on it."""
    train: list[Ratio] = []
    decode: list[Ratio] = []
    used: list[str] = []
    seen: set[str] = set()
    for sweep in timed:
        for _, row in cmp[(cmp["sweep"] == sweep) & (cmp["variant"] == by_sweep[sweep])].iterrows():
            names = table.loc[(table["sweep"] == sweep) & (table["device"] == row.get("device")), "device_name"]
            device = _device(names.dropna().iloc[0] if names.notna().any() else None, row.get("device"))
            if device in seen:
                continue
            seen.add(device)
            used.append(sweep)
            for key, into in (("train", train), ("decode", decode)):
                if not any(pd.isna(row.get(c)) for c in (key, f"{key}_ci_lo", f"{key}_ci_hi")):
                    note = _overhead(row) if key == "decode" else ""
                    roofline = row.get("decode_roofline") if note else None
                    kernel = kernel_note(table, sweep, by_sweep[sweep], row.get("device")) if key == "train" else ""
                    into.append(Ratio(float(row[key]), float(row[f"{key}_ci_lo"]), float(row[f"{key}_ci_hi"]),
                                      device, note, float(roofline) if roofline is not None else None, kernel))
    return train, decode, used


# Below this fraction of the memory bandwidth a decode step is bound by kernel launches and framework overhead, not by
# the bytes the choice moves: its ratio is marked so, beside the ratio its bytes alone give (the roofline's).
OVERHEAD_BOUND = 0.5


def _overhead(row: pd.Series) -> str:
    util = row.get("decode_bw_util")
    if util is None or pd.isna(util) or float(util) >= OVERHEAD_BOUND:
        return ""
    roofline = row.get("decode_roofline")
    known = roofline is not None and pd.notna(roofline)
    bytes_alone = f"; the bytes alone give {float(roofline):.2f}×" if known else ""
    ops = row.get("decode_ops")
    launches = f", {int(ops)} operator calls a step" if ops is not None and pd.notna(ops) else ""
    return f"overhead-bound at {float(util):.0%} of memory bandwidth{launches}{bytes_alone}"


def _loss(summary: pd.DataFrame | None, worth: pd.DataFrame, table: pd.DataFrame, sweeps: list[str],
          by_sweep: dict[str, str], settled: horizon.Settled | None = None) -> tuple[Loss | None, str | None]:
    if summary is None or summary.empty:
        return None, None
    s = summary[(summary["metric"] == "val_loss") & (summary["reference"] == GPT2)]
    for sweep in sweeps:
        q = s[(s["sweep"] == sweep) & (s["variant"] == by_sweep[sweep])]
        if q.empty or pd.isna(q["diff"].iloc[0]):
            continue
        if "d_model" in q and q["d_model"].notna().any():
            q = q[q["d_model"] == q["d_model"].max()]
        r = q.iloc[0]
        w = worth[(worth["sweep"] == sweep) & (worth["variant"] == by_sweep[sweep])] if not worth.empty else worth
        k = k_beside_verdict(w.iloc[0]) if len(w) else None
        trained = (float(w["bytes_per_param"].iloc[0]) if len(w) and "bytes_per_param" in w
                   and pd.notna(w["bytes_per_param"].iloc[0]) else _bytes_per_param(table, sweep))
        bpp = f", {trained:.2g} bytes/param" if math.isfinite(trained) else ""
        steps = _steps(table, sweep, by_sweep[sweep])
        where = f"d={int(r['d_model'])}{steps}{bpp}" if pd.notna(r.get("d_model")) else "the quality model"
        protocol, rate = _rates(table, sweep, by_sweep[sweep])
        where += protocol + _schedule(table, sweep)
        if sweep == horizon.SWEEP and settled is not None:
            where += f", {settled.phrase()}"
        n = int(r["diff_n"]) if pd.notna(r.get("diff_n")) else 0
        unit = str(r["unit"]) if isinstance(r.get("unit"), str) else "nats/byte"
        return Loss(float(r["diff"]), float(r["diff_lo"]), float(r["diff_hi"]), str(r["verdict"]), n, unit, k,
                    where, rate), sweep
    return None, None


def _rates(table: pd.DataFrame, sweep: str, variant: str) -> tuple[str, str]:
    """The learning rates the two arms trained at, from their final-loss rows: the protocol every arm shares (one
    shared rate, or each its own) and, for the latter, this comparison's two rates."""
    f = table[(table["sweep"] == sweep) & (table["metric"] == "val_loss") & (table["mode"] == "final")]
    if "lr" not in f:
        return "", ""
    own, base = (f[f["variant"] == v] for v in (variant, GPT2))
    rates = [sorted(pd.to_numeric(arm["lr"], errors="coerce").dropna().unique()) for arm in (own, base)]
    if not all(rates):
        return "", ""
    sources = f.get("lr_source", pd.Series(dtype=object)).dropna().astype(str)
    tuned = sources.str.startswith((SCANNED, TUNED)).any()
    if rates[0] == rates[1] and len(rates[0]) == 1 and not tuned:
        return f", one shared lr {rates[0][0]:g}", ""
    own_text, base_text = (", ".join(f"{r:g}" for r in arm) for arm in rates)
    return ", each arm its own lr", f"lr {own_text} (GPT-2 {base_text})"


def _schedule(table: pd.DataFrame, sweep: str) -> str:
    """The rate's schedule, where the rows record it (rows written before the column say nothing)."""
    if "schedule" not in table:
        return ""
    found = set(table.loc[table["sweep"] == sweep, "schedule"].dropna().astype(str))
    return f", {' and '.join(sorted(found))} schedule" if found else ""


def _steps(table: pd.DataFrame, sweep: str, variant: str) -> str:
    rows = table[(table["sweep"] == sweep) & (table["variant"] == variant) & (table["metric"] == "val_loss")]
    steps = pd.to_numeric(rows.get("train_steps", pd.Series(dtype=float)), errors="coerce").dropna()
    return f", {int(steps.max())} steps" if len(steps) else ""


def verdict_block(found: list[Answer], margin: float, smoke: bool = False, answer_link: bool = True) -> list[str]:
    """The block's lines from ``answers``: a heading, at most ``MAX_LINES`` sentences, and a line naming what the
    rest holds; none where the run flipped no choice of GPT-2's block. ``margin``: the harm a published "no worse"
    may hide (``ReportInputs.no_worse_margin``). ``answer_link``: the regime line also says where the reference's
    answer is (the README's own block is that answer)."""
    if not found:
        return []
    if smoke:
        return ["## Verdicts", "", SMOKE_BLOCK, ""]
    shown = found[:MAX_LINES]
    regimes = {a.loss.where for a in shown if a.loss is not None}
    units = {a.loss.unit for a in shown if a.loss is not None}
    one = len(regimes) == 1
    intro = ("Each choice against GPT-2's block: time ratios with their 95% interval (below 1 faster); Δ final loss"
             + (f" in {next(iter(units))}" if len(units) == 1 else "")
             + " with its Holm-level interval"
             + (", and what a gain is worth in the baseline's compute at that level" if any(
                 a.loss is not None and a.loss.k and a.loss.verdict == BETTER for a in shown) else "")
             + (f", at {next(iter(regimes))}" if one else "")
             + f" (below 0 better; \"within ±{margin:g}\": the interval rules out more). Terms: "
             + f"[glossary]({glossary_url()}).")
    lines = [sentence(a, margin, regime=not one) for a in shown]
    more = len(found) - MAX_LINES
    where = "the tables below" if answer_link else f"[the reference report]({repository_url(REFERENCE_REPORT)})"
    rest = " and ".join(a.choice for a in found[MAX_LINES:])
    tail = [f"{more} more choice(s), {rest}, in {where} and in summary.json.", ""] if more > 0 else []
    if regimes:
        here = f" (here {next(iter(regimes))})" if one else ""
        tail += [f"A loss verdict holds for its regime{here}: what a choice buys moves with how far training has gone "
                 f"([k against training length]({repository_url(HORIZON_PAGE)}))"
                 + (f"; the reference's answer, each arm at its own rate where k has stopped moving (or at the longest "
                    f"horizon), is in [the README]({repository_url(ANSWER_PAGE)})." if answer_link else "."), ""]
    return ["## Verdicts", "", intro, "", *lines, "", *tail]
