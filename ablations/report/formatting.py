"""Cell formatting for the report and the sizes table: numbers to short, unit-bearing text, and markdown."""

from __future__ import annotations

import pandas as pd


def is_true(v: object) -> bool:
    """A boolean cell of results.csv: a bool in memory, the text "True" once read back from the file."""
    return str(v).lower() == "true"


def fmt_count(n: float) -> str:
    return "—" if pd.isna(n) else f"{int(round(n)):,}"


def fmt_signed(n: float) -> str:
    return "—" if pd.isna(n) else f"{int(round(n)):+,}"


def fmt_bytes(n: float) -> str:
    """Binary units, three significant figures: 1.25 GiB, 320 KiB."""
    if pd.isna(n):
        return "—"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def fmt_flops(n: float) -> str:
    if pd.isna(n):
        return "—"
    for unit, size in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} FLOP"


def fmt_flops_executed(design: float, executed: float) -> str:
    """The design's FLOPs, and the executed beside them where the kernels computed more: ``1.2 GFLOP (executed
    2.1 GFLOP)``."""
    if pd.isna(executed) or executed == design:
        return fmt_flops(design)
    return f"{fmt_flops(design)} (executed {fmt_flops(executed)})"


def fmt_ratio(x: float) -> str:
    return "—" if pd.isna(x) else f"{x:.3g}×"


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub markdown table of already-formatted cells (pandas' ``to_markdown`` needs tabulate)."""
    def cell(v: object) -> str:
        return "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v).replace("|", "\\|")

    head = "| " + " | ".join(cell(column) for column in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in r) + " |" for r in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def fmt_spread(v: float, lo: float, hi: float) -> str:
    """``1.18× [1.12, 1.25]``: a ratio with its 95% interval. Brackets are always a 95% interval in a report; a
    spread is ``fmt_with_quartiles``."""
    if pd.isna(v):
        return "—"
    if pd.isna(lo) or pd.isna(hi):
        return f"{v:.3f}×"
    return f"{v:.3f}× [{lo:.3f}, {hi:.3f}]"


def fmt_with_quartiles(v: float, lo: float, hi: float) -> str:
    """``1.18× (p25–p75 1.12–1.25)``: a ratio with its rounds' spread, labelled as one (never in brackets)."""
    if pd.isna(v):
        return "—"
    return f"{v:.3f}×" if pd.isna(lo) or pd.isna(hi) else f"{v:.3f}× (p25–p75 {lo:.3f}–{hi:.3f})"


def fmt_ratio_with(v: float, lo: float, hi: float, interval: bool) -> str:
    """A ratio with its 95% interval when ``interval``, else with its rounds' spread, labelled."""
    return fmt_spread(v, lo, hi) if interval else fmt_with_quartiles(v, lo, hi)


def fmt_quartiles(lo: float, hi: float) -> str:
    """``1.12–1.25``: the middle half of the paired rounds' ratios, their spread (not an interval)."""
    return "—" if pd.isna(lo) or pd.isna(hi) else f"{lo:.3f}–{hi:.3f}"


def fmt_precision(halfwidth: float, rounds: float, budget: bool) -> str:
    """``±1.2% (16)``: a ratio's 95% interval as a relative half-width, and the rounds it took; ``‡`` when the
    rounds ran out before the interval reached its target."""
    if pd.isna(halfwidth):
        return "—"
    return f"±{100 * halfwidth:.1f}% ({int(rounds)}{', ‡' if is_true(budget) else ''})"


def fmt_seeds(n: float, stopped: object, target: float) -> str:
    """``8 (answered)``: the seeds a comparison used and, when they were added until answered, whether its target
    was reached; ``‡`` when ``max_seeds`` ran out first (the timing's budget mark)."""
    if pd.isna(n):
        return "—"
    if not isinstance(stopped, str) or stopped in ("fixed", "baseline"):
        return f"{int(n)}"
    on = f"target {target:.2g}" if not pd.isna(target) else "target"
    return f"{int(n)} ({'budget, ‡' if stopped == 'budget' else f'{on}: ' + stopped})"


def fmt_x(v: float) -> str:
    """Three decimals: a 0.5% FLOPs difference must not print as 1×."""
    return "—" if pd.isna(v) else f"{v:.3f}×"


def fmt_pct(v: float) -> str:
    return "—" if pd.isna(v) else f"{100 * v:.0f}%"


# A utilisation above 100% of a measured ceiling is not a kernel beating the hardware but a ceiling measured low.
UNDER_MEASURED = "ceiling under-measured"


def fmt_util(v: float) -> str:
    """A fraction of a measured ceiling: ``45%``; above 100% never bare: ``118% (ceiling under-measured)``."""
    return fmt_pct(v) if pd.isna(v) or v <= 1 else f"{fmt_pct(v)} ({UNDER_MEASURED})"


def fmt_rate(v: float) -> str:
    return "—" if pd.isna(v) else f"{v:,.0f}"


def fmt_params_delta(delta: float, base: float) -> str:
    if pd.isna(delta) or pd.isna(base) or base == 0:
        return "—"
    if delta == 0:
        return "0"
    return f"⚠ {fmt_signed(delta)} ({100 * delta / base:+.2f}%)"


def fmt_ci(v: float, lo: float, hi: float, signed: bool = False) -> str:
    if pd.isna(v):
        return "—"
    f = "{:+.4f}" if signed else "{:.4f}"
    if pd.isna(lo) or pd.isna(hi):
        return f.format(v)
    return f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]"


def signed(x: float) -> str:
    """A loss difference with its sign, a true minus."""
    return f"{x:+.3f}".replace("-", "−")


def fmt_p(p: float) -> str:
    """Two significant figures; the smallest p-values as a bound (their digits mean nothing with 3 seeds)."""
    return "—" if pd.isna(p) else "<0.0001" if p < 1e-4 else f"{p:.2g}"


def fmt_verdict(verdict: object, mde: float = float("nan"), note: object = None) -> str:
    """The verdict with what the test could have seen: ``no detectable difference; could have detected
    |d| >= 0.052`` (the minimum detectable effect at 80% power), or why no such size exists."""
    if not isinstance(verdict, str):
        return "—"
    if not pd.isna(mde):
        return f"{verdict}; could have detected |d| >= {mde:.2g}"
    return f"{verdict}; {note}" if isinstance(note, str) and note else verdict


def number_word(n: int) -> str:
    """``5`` -> ``five``: counts of choices read as words in prose (digits past ten)."""
    words = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[n] if 0 <= n < len(words) else str(n)


# The longest prose line a report writes; tables, headings, code and images keep their lines whole.
PROSE_WIDTH = 200


def wrap_prose(lines: list[str], width: int = PROSE_WIDTH) -> list[str]:
    """``lines`` with every prose line longer than ``width`` broken at spaces (a bullet's continuation indented, so
    Markdown reads one paragraph or one bullet as before); tables, headings, fenced code and images untouched."""
    import textwrap

    out: list[str] = []
    fenced = False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or len(line) <= width or line.lstrip().startswith(("|", "#", "![", "<", "```")):
            out.append(line)
            continue
        bullet = line.lstrip().startswith(("- ", "* "))
        indent = " " * (len(line) - len(line.lstrip()) + (2 if bullet else 0))
        out.extend(textwrap.wrap(line, width=width, subsequent_indent=indent, break_long_words=False,
                                 break_on_hyphens=False))
    return out
