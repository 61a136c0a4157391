"""The report from a synthetic table: sections, figures on disk, skipped figures, claims, quality, CLI errors."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ablations.report import claims
from ablations.report.__main__ import main as report_main
from ablations.report.comparison import comparison
from ablations.report.markdown import build_report, quality_section
from ablations.report.quality_sections import summarize_quality
from ablations.report.sizes import sizes_table
from ablations.report.tables import load_table, split
from ablations.results.report_inputs import write_report_inputs
from blockbench import EVIDENCE, Claim, choice, choices
from tests.report.conftest import recorded_inputs
from tests.temporary_choice import temporary_choice

LINK = re.compile(r"\]\((figures/[^)]+)\)")
# Each declared choice's claim, by group: the table has exactly these rows, in declaration order.
CLAIM = {declared.group: declared.claim.text for declared in choices() if declared.claim is not None}
# In table order: each choice's own claim, then its claims about other values (GeGLU against SwiGLU).
CLAIMS = [text for declared in choices()
          for text in ([declared.claim.text] if declared.claim else [])
          + [v.text for v in declared.value_claims.values()]]


def write(table: pd.DataFrame, folder: Path) -> Path:
    """``table`` as a sweep leaves it: its rows, and the report's inputs beside them."""
    folder.mkdir(parents=True, exist_ok=True)
    table.to_csv(folder / "results.csv", index=False)
    write_report_inputs(folder, recorded_inputs())
    return folder


@pytest.fixture(scope="module")
def built(synthetic, tmp_path_factory) -> tuple[Path, str]:
    """One report over a norm, a kv and a pos sweep, built without the quality statistics module."""
    folder = write(synthetic(sweeps=("norm", "kv", "pos")), tmp_path_factory.mktemp("built"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "ablations.quality.stats", None)  # as if the module did not exist
        path = build_report(folder)
    return folder, path.read_text()


def claims_rows(text: str) -> dict[str, list[str]]:
    section = text.split("## Claims", 1)[1].split("\n## ", 1)[0]
    rows = [ln.strip("|").split(" | ") for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]
    return {r[0].strip(): [cell.strip() for cell in r[1:]] for r in rows[1:]}


def unmeasured_claims(text: str) -> list[str]:
    """The claims the report names in its one line of those this run did not measure."""
    section = text.split("## Claims", 1)[1].split("\n## ", 1)[0]
    paragraph = next((p for p in section.split("\n\n") if p.startswith("Not measured in this run: ")), "")
    return re.findall(r'"([^"]+)"', " ".join(paragraph.split()))  # a paragraph wrapped at the prose width


def test_report_has_setup_sweeps_sizes_and_failures(built):
    folder, text = built
    assert (folder / "REPORT.md").is_file()
    for heading in ("## Setup", "## Claims", "## Sweep `norm`", "## Sweep `kv`", "## Sweep `pos`",
                    "## Full-size models", "## Failed or diverged points", "## How to read this"):
        assert heading in text, heading
    for value in ("Test CPU (2 cores)", "2.13.0+cpu", "0123456789ab", "3f2a1b0c9d8e7f60", "MALLOC_MMAP_THRESHOLD_",
                  "`default`", "float32"):
        assert value in text.split("## Claims")[0], value
    assert "RuntimeError: synthetic failure" in text
    assert "124,439,808" in text and "68,976,648,192" in text


def test_variant_tables_show_paired_ratios_params_and_decode(built):
    _, text = built
    norm = text.split("## Sweep `norm`")[1].split("## Sweep")[0]
    rms = next(ln for ln in norm.splitlines() if ln.startswith("| rmsnorm |") and "×" in ln)
    assert "1.030× [1.020, 1.040]" in rms and "1.120× [1.109, 1.131]" in rms  # forward, train at 4x512
    assert "forward × (4x512)" in norm
    assert "⚠ -3,072 (-0.02%)" in norm  # parameters differ from the baseline: flagged
    kv = text.split("## Sweep `kv`")[1].split("## Sweep")[0]
    assert "decode × (B=4, context 2,048)" in kv  # the longest context, largest batch there
    gqa = next(ln for ln in kv.splitlines() if ln.startswith("| gqa2 |") and "0.620×" in ln)
    assert "0.620× [0.614, 0.626]" in gqa
    size_row = next(ln for ln in kv.splitlines() if ln.startswith("| gqa2 |") and "KiB" in ln)
    assert "0.125×" in size_row  # KV bytes per token: 2 of 16 heads
    assert "### Latency ratio at every shape" in norm and "forward 1x128" in norm


def test_every_figure_is_written_non_empty_and_linked(built):
    folder, text = built
    linked = set(LINK.findall(text))
    on_disk = {f"figures/{p.name}" for p in (folder / "figures").iterdir()}
    assert linked == on_disk
    for name in on_disk:
        assert (folder / name).stat().st_size > 1000, name
    stems = {Path(n).stem for n in on_disk}
    assert {"norm-ratios", "norm-latency-ratio-vs-seq", "norm-decode-ratio-vs-context", "norm-training-curves",
            "kv-ratios", "kv-decode-ratio-vs-context", "pos-extrapolation", "pos-loss-by-position"} <= stems
    for stem in stems:  # each figure in both formats
        assert {f"figures/{stem}.png", f"figures/{stem}.svg"} <= on_disk
    png = (folder / "figures" / "norm-ratios.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    svg = (folder / "figures" / "kv-decode-ratio-vs-context.svg").read_text()
    assert "context length (cached tokens)" in svg and "decode step time, variant / baseline" in svg
    caption = " ".join(text.split("(figures/kv-decode-ratio-vs-context.png)", 1)[1].split("[SVG]", 1)[0].split())
    assert "from the same pairing" in caption and "Absolute times of different points are not drawn" in caption
    svg = (folder / "figures" / "pos-extrapolation.svg").read_text()
    assert "evaluation length (tokens)" in svg and "nats/byte" in svg and "cannot at 256, 512" in svg


def test_a_report_without_figures_draws_none_keeps_none_stale_and_says_how_to_draw_them(built, tmp_path,
                                                                                         monkeypatch):
    from ablations.report.figure_captions import SUFFIXES

    source, text = built
    assert {p.suffix for p in (source / "figures").iterdir()} == set(SUFFIXES)  # every format save writes
    folder = tmp_path / "sweep"
    folder.mkdir()
    for record in ("results.csv", "report_inputs.json"):
        (folder / record).write_bytes((source / record).read_bytes())
    (folder / "figures").mkdir()
    for stale in ("norm-ratios.png", "norm-ratios.svg"):
        (folder / "figures" / stale).write_bytes(b"from an earlier build")
    (folder / "figures" / "notes.txt").write_text("a user's own file")
    monkeypatch.setitem(sys.modules, "ablations.quality.stats", None)  # as ``built`` was
    for plotting in ("ablations.report.figures", "matplotlib", "seaborn"):  # and it needs no plotting library
        monkeypatch.setitem(sys.modules, plotting, None)
    without = build_report(folder, draw_figures=False).read_text()
    assert [p.name for p in (folder / "figures").iterdir()] == ["notes.txt"]
    assert not LINK.findall(without)
    undrawn = f"*Not drawn in this build (figures=false, --no-figures): `blockbench report {folder}` draws them.*"
    assert without.count(undrawn) == 3  # once per sweep, where its figures would be
    # Everything else is the report with figures (the sources line names each folder).
    def besides_figures(report: str, folder: Path) -> str:
        parts = re.split(r"(?m)^### Figures\n[\s\S]*?(?=^## )", report.replace(str(folder), "FOLDER"))
        return "".join(parts)

    assert besides_figures(without, folder) == besides_figures(text, source)


def test_figures_without_data_are_skipped_with_a_note(built):
    folder, text = built
    kv = text.split("## Sweep `kv`")[1].split("## Sweep")[0]
    assert "*Training curves over seeds: skipped, no quality rows (training runs) in this sweep.*" in kv
    assert "*Loss against evaluation length: skipped, no quality rows (training runs) in this sweep.*" in kv
    assert not list((folder / "figures").glob("kv-training*")) and not list((folder / "figures").glob("kv-extrap*"))
    pos = text.split("## Sweep `pos`")[1].split("\n## ")[0]  # quality rows only: no timing figures
    assert "Paired latency ratio against the baseline: skipped, no variant compared with the baseline" in pos
    assert not list((folder / "figures").glob("pos-ratios*"))


def test_claims_table_has_every_declared_claim_with_sources(built, sizes):
    rows, unmeasured = claims_rows(built[1]), unmeasured_claims(built[1])
    # Every declared claim once: a row when this run measured it, else named in the one line after the table.
    assert list(rows) == [claim for claim in CLAIMS if claim in rows] and sorted([*rows, *unmeasured]) == sorted(CLAIMS)
    assert CLAIM["ffn"] in unmeasured and CLAIM["bias"] in unmeasured  # no swiglu, no nobias here
    table = load_table(built[0])
    frame = claims.claims_table(table, comparison(split(table)[0]), None, sizes).set_index("claim")
    measured, published, reading = frame.loc[CLAIM["ffn"]]
    assert measured == "not measured in this run" and "not measured in this run" in reading
    assert "Shazeer 2020" in published and "1.944" in published
    measured, published, reading = rows[CLAIM["pos"]]
    assert "cannot at 256" in measured and "Press et al. 2022" in published
    assert "learned positions cannot be evaluated past their table" in reading
    measured, published, reading = rows[CLAIM["attn"]]
    assert "MHA 10 GiB vs GQA-8 1.25 GiB" in measured and "faster (0.62× [" in reading
    measured, _, reading = rows[CLAIM["norm"]]
    assert "slower (1.12× [" in reading and "composite" not in reading  # no cause this run did not measure
    measured, published, reading = frame.loc[CLAIM["bias"]]
    assert measured == "not measured in this run" and "PaLM" in published  # no nobias variant here
    for declared in choices():  # a claim read from its flip (the default evidence) names its sources all the same
        if declared.claim is not None and declared.claim.evidence == "flip":
            measured, published, _ = frame.loc[CLAIM[declared.group]]
            assert measured == "not measured in this run"
            assert all(src in published for src, _ in declared.claim.published)
        for value, claim in declared.value_claims.items():  # a claim about a value is read from that value's flip
            measured, published, _ = frame.loc[claim.text]
            assert f"`{declared.value_name(value)}`" in measured or measured.startswith("not measured in this run")
            assert all(fig in published for _, fig in claim.published)


@pytest.fixture(scope="module")
def sizes() -> pd.DataFrame:
    return sizes_table()


def claims_for(table: pd.DataFrame, sizes: pd.DataFrame, quality: pd.DataFrame | None = None) -> dict[str, str]:
    measured, _, _ = split(table)
    frame = claims.claims_table(table, comparison(measured), quality, sizes)
    return dict(zip(frame["claim"], frame["reading"], strict=True))


@pytest.mark.parametrize("ratio,word", [(0.8, "faster"), (1.3, "slower"), (1.0, "no measurable difference")])
def test_claim_readings_follow_the_numbers(synthetic, sizes, ratio, word):
    readings = claims_for(synthetic(ratios={"rmsnorm": (ratio, ratio, 1.0), "gqa2": (1.0, 1.0, ratio)},
                                    quality=False), sizes)
    assert f"forward+backward {word}" in readings[CLAIM["norm"]]
    assert "composite" not in readings[CLAIM["norm"]]
    assert f"against MHA: {word}" in readings[CLAIM["attn"]]


def test_a_ratio_inside_the_baselines_own_noise_is_not_a_difference(synthetic, sizes):
    table = synthetic(quality=False)
    noisy = (table["variant"] == "gpt2") & (table["metric"] == "ratio_interval") & (table["sweep"] == "norm")
    table.loc[noisy, ["lo", "hi"]] = [0.9, 1.2]  # the A/A interval of the baseline against itself
    readings = claims_for(table, sizes)
    assert "forward+backward no measurable difference" in readings[CLAIM["norm"]]
    assert "A/A interval [0.90, 1.20]" in readings[CLAIM["norm"]]


def test_quality_section_is_skipped_without_the_stats_module(built):
    norm = built[1].split("## Sweep `norm`")[1].split("## Sweep")[0]
    assert "`ablations.quality.stats` is not importable here: the quality summary is skipped" in norm
    assert "d_model 128, 4 layers, 4 heads; batch 32 × context 128; 100 steps; seeds 0, 1, 2" in norm
    assert "loss became inf at step 40" in built[1]  # the diverged seed is listed


def fake_summarize(table: pd.DataFrame) -> pd.DataFrame:
    """The shape of ``ablations.quality.stats.summarize``'s answer, with made-up intervals."""
    final = table[(table["metric"] == "val_loss") & (table["mode"] == "final") & (table["status"] == "ok")]
    out = final.groupby(["sweep", "variant", "metric"], as_index=False)["value"].agg(mean="mean", std="std")
    out["n"], out["reference"], out["diverged"] = 3, "gpt2", 0
    out["ci_lo"], out["ci_hi"] = out["mean"] - 0.02, out["mean"] + 0.02
    out["diff"] = out["mean"] - out.loc[out["variant"] == "gpt2", "mean"].iloc[0]
    out["diff_lo"], out["diff_hi"] = out["diff"] - 0.03, out["diff"] + 0.03
    out["verdict"] = out["variant"].map({"gpt2": "baseline"}).fillna("no detectable difference")
    out["seq_len"] = np.nan
    return out


def test_quality_summary_is_rendered_and_read_by_the_claims(synthetic, sizes, monkeypatch):
    module = types.ModuleType("ablations.quality.stats")
    module.summarize = fake_summarize
    monkeypatch.setitem(sys.modules, "ablations.quality.stats", module)
    table = synthetic()
    _, quality, _ = split(table)
    summary, note = summarize_quality(table)
    section = "\n".join(quality_section(quality[quality["sweep"] == "norm"], summary, note))
    row = next(ln for ln in section.splitlines() if ln.startswith("| rmsnorm |"))
    assert "no detectable difference" in row and " [" in row and "19,000" in row
    assert "val loss (nats/byte) [95% CI]" in section
    readings = claims_for(table, sizes, summary)
    assert "Quality: no detectable difference in validation loss" in readings[CLAIM["norm"]]


def test_a_failing_summary_is_a_note_not_a_crash(synthetic, monkeypatch):
    module = types.ModuleType("ablations.quality.stats")
    module.summarize = lambda table: 1 / 0
    monkeypatch.setitem(sys.modules, "ablations.quality.stats", module)
    table = synthetic()
    summary, note = summarize_quality(table)
    assert summary is None and "ZeroDivisionError" in note


def test_the_real_stats_module_feeds_the_report(synthetic, sizes):
    pytest.importorskip("ablations.quality.stats")
    table = synthetic(sweeps=("norm", "pos"))
    summary, note = summarize_quality(table)
    assert summary is not None, note
    assert {"sweep", "variant", "metric", "mean", "ci_lo", "ci_hi", "diff", "diff_lo", "diff_hi", "verdict"} <= set(
        summary.columns)
    assert {"p", "p_holm", "family", "alpha_adjusted", "mde", "mde_note"} <= set(summary.columns)
    _, quality, _ = split(table)
    section = "\n".join(quality_section(quality[quality["sweep"] == "pos"], summary, note))
    assert "cannot" in section and "512 tokens" in section
    assert "Holm-Bonferroni across the sweep's comparisons of this quantity (2 comparisons here)" in section
    assert "| Δ vs reference [CI] | CI level | p / Holm p | verdict |" in section
    none = summary[(summary["sweep"] == "pos") & (summary["variant"] == "none") & (summary["metric"] == "val_loss")]
    row = next(ln for ln in section.splitlines() if ln.startswith("| none |"))
    level = f"{100 * (1 - none['alpha_adjusted'].item()):.3g}%"
    assert f"| {level} |" in row and f"could have detected \\|d\\| >= {none['mde'].item():.2g}" in row
    reading = claims_for(table, sizes, summary)[CLAIM["norm"]]
    assert "Quality: " in reading and f"Quality: {claims.NOT_MEASURED}" not in reading
    assert "could have detected |d| >= " in reading  # the norm sweep's rmsnorm: no detectable difference


# --- the command line ---------------------------------------------------------------------------------

def test_cli_missing_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert report_main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("blockbench report: error: ") and "is not a folder" in err


def test_cli_folder_without_a_table_is_one_line_and_exit_2(tmp_path, capsys):
    assert report_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no results table in" in err and "results.csv" in err


def test_cli_combines_folders_into_out(synthetic, tmp_path, capsys, monkeypatch):
    from ablations.report import figures

    drawn = []
    monkeypatch.setattr(figures, "draw_all", lambda *args: drawn.append(args[0]) or {})  # drawing is tested above
    table = synthetic(quality=False, failed=False)
    a = write(table[table["sweep"] == "norm"], tmp_path / "a")
    b = write(table[table["sweep"] == "kv"], tmp_path / "b")
    out = tmp_path / "combined"
    assert report_main([str(a), str(b), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str((out / "REPORT.md").resolve())
    text = (out / "REPORT.md").read_text()
    assert "## Sweep `norm`" in text and "## Sweep `kv`" in text
    assert len(pd.read_csv(out / "results.csv")) == len(table)  # the new folder can be rebuilt on its own
    assert not (a / "REPORT.md").exists()
    assert drawn == [out / "figures"]
    assert report_main([str(out), "--no-figures"]) == 0 and drawn == [out / "figures"]  # not drawn again
    assert "*Not drawn in this build" in (out / "REPORT.md").read_text()


@pytest.mark.parametrize("family,says", [(0, "(none here: no comparison has two shared seeds)"),
                                         (1, "(1 comparison here)"), (5, "(5 comparisons here)")])
def test_the_holm_sentence_names_the_family_size(family, says):
    from ablations.report.quality_sections import holm_sentence

    assert says in holm_sentence(pd.DataFrame({"metric": ["val_loss"], "family": [family]}))


def test_the_bias_claim_reads_its_parameters_time_and_quality():
    spread = {f"{k}{s}": v for k, vals in {"fwd": (0.97, 0.95, 0.99), "train": (0.99, 0.97, 1.02),
                                            "decode": (0.98, 0.96, 1.01)}.items()
              for s, v in zip(("", "_ci_lo", "_ci_hi"), vals, strict=True)}
    cmp = pd.DataFrame([dict(variant="nobias", sweep="bias", params_delta=-20_480, params_baseline=12_596_224,
                             shape="4x512", device="cpu", dtype="float32", compile=False, fwd_flops=1.0, **spread)])
    quality = pd.DataFrame([dict(sweep="bias", variant="nobias", metric="val_loss", reference="gpt2", mean=1.80,
                                 ci_lo=1.79, ci_hi=1.81, unit="nats/byte", diff=0.002, diff_lo=-0.01, diff_hi=0.014,
                                 alpha_adjusted=0.05, p_holm=0.6, verdict="no detectable difference", mde=0.02,
                                 mde_note="")])
    bias = choice("bias")
    read = claims.READINGS[bias.claim.evidence]
    measured, reading = read(bias, bias.claim, pd.DataFrame(), cmp, quality, pd.DataFrame())
    assert "parameters -0.163%" in measured and "forward 0.97× [0.95, 0.99]" in measured
    assert "Holm p 0.6" in measured
    assert "forward faster (0.97× [0.95, 0.99])" in reading and "forward+backward no measurable difference" in reading
    assert "no detectable difference in validation loss (this run could have detected |d| >= 0.02" in reading


def test_a_choice_that_varies_in_a_sweep_is_in_the_name_not_a_case_suffix():
    from ablations.report.tables import add_case

    rows = pd.DataFrame([dict(sweep="bias", variant=v, bias=b, tie_embeddings=True, device="cpu", dtype="float32",
                              compile=False, threads=2, d_model=1024, n_layers=1, n_heads=16, profile="default")
                         for v, b in (("gpt2", True), ("nobias", False))])
    cases = add_case(rows)
    assert list(cases["case"]) == ["gpt2", "nobias"] and set(cases["base_case"]) == {"gpt2"}


def test_a_quality_only_sweep_lists_its_variants_from_the_quality_rows():
    from ablations.report.markdown import sweep_section

    q = pd.DataFrame([dict(sweep="ladder", variant=v, pos=p, norm="rmsnorm", ffn="swiglu", n_kv_heads=1, n_heads=4,
                           bias=b, tie_embeddings=t, metric="val_loss", mode="final", value=1.8, seed=0, status="ok",
                           d_model=128, n_layers=4, batch=32, seq_len=128, step=250, corpus="c", unit="nats/byte",
                           statistic="mean")
                      for v, p, b, t in (("llama2", "rope-half", False, False), ("llama2-bias-tied", "rope-half", True,
                                                                                    True))])
    text = "\n".join(sweep_section("ladder", pd.DataFrame(), pd.DataFrame(), q, (None, ""), []))
    assert "| llama2 | rope-half | rmsnorm | swiglu | 1 / 4 | off | untied |" in text
    assert "| llama2-bias-tied | rope-half | rmsnorm | swiglu | 1 / 4 | on | tied |" in text


def test_cli_a_disk_that_refuses_the_report_is_one_line_and_exit_1(synthetic, tmp_path, capsys, monkeypatch):
    from ablations.report import __main__ as report_cli
    from ablations.results.durable import WriteError

    folder = write(synthetic(quality=False, failed=False), tmp_path / "sweep")

    def refuse(*args, **kwargs):
        raise WriteError(f"{folder / 'REPORT.md'}: cannot write (No space left on device)")

    monkeypatch.setattr(report_cli, "build_report", refuse)
    assert report_main([str(folder)]) == 1
    assert capsys.readouterr().err == (f"blockbench report: error: {folder / 'REPORT.md'}: cannot write "
                                       "(No space left on device)\n")


def test_the_work_table_shows_the_executed_flops_beside_the_designs_and_flags_a_utilisation_over_one(synthetic,
                                                                                                  tmp_path):
    table = synthetic(sweeps=("norm",), quality=False, failed=False)
    rms = (table["variant"] == "rmsnorm") & (table["mode"] == "forward")
    executed = table[rms & (table["metric"] == "flops")].assign(metric="executed_flops")
    executed["value"] *= 1.5  # as if a dense masked kernel computed half again the design's work
    table.loc[rms & (table["metric"] == "utilisation"), "value"] = 1.18
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "ablations.quality.stats", None)
        text = build_report(write(pd.concat([table, executed], ignore_index=True), tmp_path)).read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| rmsnorm |") and "GFLOP" in ln)
    design = table.loc[rms & (table["metric"] == "flops") & (table["batch"] == 4), "value"].iloc[0]
    assert f"{design / 1e9:.3g} GFLOP (executed {1.5 * design / 1e9:.3g} GFLOP)" in row
    assert "118% (ceiling under-measured) / " in row
    baseline = next(ln for ln in text.splitlines() if ln.startswith("| gpt2 |") and "GFLOP" in ln)
    assert "executed" not in baseline and "under-measured" not in baseline


def test_a_new_groups_claim_is_read_from_the_evidence_it_declares():
    # Every kind of evidence a claim may declare has its reading; no reading names a group.
    assert set(claims.READINGS) == set(EVIDENCE) and set(claims.VALUE_READINGS) <= set(EVIDENCE)
    with pytest.raises(ValueError, match="evidence='typo' is not one of flip, speed"):
        Claim("a claim", evidence="typo")
    claim = Claim("The extra thing trains stably", (("Someone 2025", "no spikes"),), evidence="stability")
    with temporary_choice(claim=claim) as extra:
        measured, reading = claims.READINGS[extra.claim.evidence](extra, claim, pd.DataFrame(), pd.DataFrame(), None,
                                                                  pd.DataFrame())
    assert measured == claims.NOT_MEASURED
    assert "`extra`" in reading and reading.endswith("Stability: no quality runs, nothing to say.")



# The claims table and its readings, one module each job: none may name a group, a value or a declared sweep.
CLAIM_MODULES = ("claims", "claim_rows", "readings", "extrapolation_reading", "kv_cache_reading")


def test_no_reading_names_a_group_a_value_or_a_sweep():
    import ast
    import importlib

    declared_names = {declared.group for declared in choices()} | {v for declared in choices() for v in declared.values}
    declared_names |= {claim.sweep for declared in choices()
                       for claim in [declared.claim, *declared.value_claims.values()] if claim and claim.sweep}
    for name in CLAIM_MODULES:
        module = importlib.import_module(f"ablations.report.{name}")
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not named & declared_names, f"ablations/report/{name}.py names {sorted(named & declared_names)}"


def test_a_claim_reads_a_sweep_that_exists():
    from ablations.config.generated_sweeps import sweep_lines

    for declared in choices():
        for claim in [declared.claim, *declared.value_claims.values()]:
            if claim is not None and claim.sweep:
                assert claim.sweep in sweep_lines(), (declared.group, claim.sweep)
