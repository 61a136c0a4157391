"""``python -m ablations.regress``: the statistics, the two trees in one process, the case set, the reports and
every setup problem as one line with exit status 2 (decided before any timing)."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from scipy import stats

from ablations.config.columns import name_in
from ablations.measure.intervals import Interval, median_interval
from ablations.measure.timing import PairedTiming
from ablations.regress import (
    callgrind,
    check,
    cli,
    history,
    instruction_counts,
    measure_case,
    outcome_lines,
    report_files,
    revisions,
    summary,
)
from ablations.regress.cases import CI_CASES, all_cases, block_variants, select
from ablations.regress.paired import verdict
from ablations.regress.revisions import REPO, SetupError, resolve
from ablations.regress.trees import Tree, base_tree, head_tree

PROG = [sys.executable, "-m", "ablations.regress"]


# --- statistics -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,lo_rank", [(6, 1), (10, 2), (12, 3), (15, 4), (20, 6), (30, 10)])
def test_median_interval_uses_the_binomial_order_statistics(n, lo_rank):
    iv = median_interval([float(i) for i in range(1, n + 1)])
    assert (iv.lo, iv.hi) == (lo_rank, n + 1 - lo_rank)
    assert iv.coverage == pytest.approx(1 - 2 * stats.binom.cdf(lo_rank - 1, n, 0.5))
    assert iv.coverage >= 0.95
    # one rank further in would no longer cover 95%
    assert 1 - 2 * stats.binom.cdf(lo_rank, n, 0.5) < 0.95


def test_median_interval_with_too_few_rounds_is_min_max_with_its_coverage():
    iv = median_interval([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (iv.median, iv.lo, iv.hi) == (3.0, 1.0, 5.0)
    assert iv.coverage == pytest.approx(1 - 2 / 32)


def test_the_family_wise_level_widens_each_case_interval():
    from ablations.regress.paired import case_confidence

    assert case_confidence(1) == pytest.approx(0.95)
    assert case_confidence(48) == pytest.approx(1 - 0.05 / 48)
    ratios = [1.0 + 0.01 * i for i in range(12)]
    one, many = median_interval(ratios, case_confidence(1)), median_interval(ratios, case_confidence(48))
    assert (one.lo, one.hi) == (ratios[2], ratios[9])  # 3rd and 10th of 12 at 95%
    assert (many.lo, many.hi) == (ratios[0], ratios[11]) and many.coverage >= case_confidence(48)


def test_one_spoiled_round_moves_the_interval_by_at_most_one_rank():
    clean = [1.0 + 0.001 * i for i in range(15)]
    spoiled = clean[:-1] + [9.0]
    assert median_interval(spoiled).lo == median_interval(clean).lo
    assert median_interval(spoiled).median == median_interval(clean).median


@pytest.mark.parametrize("lo,hi,expected", [(1.051, 1.2, "regression"), (1.049, 1.2, "unchanged"),
                                            (0.8, 0.949, "improvement"), (0.8, 0.951, "unchanged"),
                                            (0.97, 1.03, "unchanged")])
def test_verdict_needs_the_whole_interval_past_the_threshold(lo, hi, expected):
    assert verdict(Interval((lo + hi) / 2, lo, hi, 0.95), 0.05) == expected


from blockbench import choice, choices  # noqa: E402
from components import ArchConfig, ModelConfig  # noqa: E402

# --- cases --------------------------------------------------------------------------------------------------

def test_the_default_set_covers_every_component_variant_and_the_block_in_every_mode():
    names = {case.name for case in all_cases()}
    timed_positions = [v for v in choice("pos").values if v != "none"]  # NoPE adds nothing to time
    for comp, variants, modes in (("norm", choice("norm").values, ("forward", "train")),
                                  ("ffn", choice("ffn").values, ("forward", "train")),
                                  ("pos", timed_positions, ("forward", "train")),
                                  ("attn", ("mha", "gqa2", "mqa"), ("forward", "train", "decode")),
                                  ("block", ("gpt2", "rmsnorm", "rope", "none", "swiglu", "gqa4", "gqa2", "mqa",
                                             "nobias", "llama2"), ("forward", "train", "decode"))):
        assert {f"{comp}/{v}/{m}" for v in variants for m in modes} <= names
    # Every other value of every declared choice is a block case of its own, named as its sweep point is.
    for declared in choices():
        for value in declared.values[1:]:
            flipped = ArchConfig(model=ModelConfig(n_heads=8), **{declared.group: declared.at_size(value, 2)})
            name = name_in(declared, flipped)
            assert {f"block/{name}/{m}" for m in ("forward", "train", "decode")} <= names, name
    assert len(names) == len(all_cases())  # no name twice
    assert [case.name for case in select("ci")] == [case.name for case in all_cases() if case.name in CI_CASES]
    assert len(select("ci")) == len(CI_CASES)


def test_block_cases_build_from_a_tree_with_bias_as_a_choice_and_from_one_with_model_bias():
    import types

    import components
    from ablations.regress.architecture import arch

    llama = arch(components, pos="rope", norm="rmsnorm", ffn="swiglu", attn="gqa", kv=2, bias="off")
    assert not llama.bias.enabled and arch(components).bias.enabled

    class OldModelConfig(components.ModelConfig):  # the dataclass as it was: bias on the model
        def __init__(self, bias: bool = True, **sizes: object) -> None:
            super().__init__(**sizes)
            self.bias = bias

    old = types.SimpleNamespace(**{k: getattr(components, k) for k in ("ArchConfig", "PosConfig", "NormConfig",
                                                                      "FFNConfig", "AttnConfig")},
                                ModelConfig=OldModelConfig)
    assert arch(old, bias="off").model.bias is False


def test_filters_take_whole_segments_and_globs():
    assert {case.name for case in select("default", ["block/llama2"])} == {f"block/llama2/{m}" for m in
                                                                     ("forward", "train", "decode")}
    assert {case.name for case in select("default", ["norm/*/train"])} == {"norm/layernorm/train", "norm/rmsnorm/train"}
    assert select("default", ["nothing-like-this"]) == []
    assert select("default", ["llama"]) == []  # part of a segment: -k takes whole segments (test_case_filter.py)


@pytest.mark.parametrize("name", ["norm/rmsnorm/train", "pos/rope/forward", "attn/gqa2/decode", "block/llama2/train"])
def test_each_case_builds_runs_and_renews_its_memory(name):
    import components

    subject = next(case for case in all_cases() if case.name == name).build(components)
    subject.call()
    pointers = [t.data_ptr() for t in subject.state]
    subject.renew()
    assert all(p != t.data_ptr() for p, t in zip(pointers, subject.state, strict=True))
    subject.call()  # still runs on the new memory


# --- trees --------------------------------------------------------------------------------------------------

def test_two_trees_load_apart_and_each_builds_from_its_own_code(tmp_path):
    import components as ours

    base = base_tree("HEAD", tmp_path / "base").load()
    assert Path(base.components.__file__).resolve().is_relative_to((tmp_path / "base").resolve())
    assert base.components is not ours
    assert sys.modules["components"] is ours  # the process's own modules are back
    with base.active() as components:
        assert sys.modules["components"] is components is base.components
        # a lazy import inside the library (ArchConfig.validate imports the registries) sees the same tree
        from components import registries
        assert registries.__module__ == "components"
        assert sys.modules["components.norms"] is base.modules["components.norms"]
    assert sys.modules["components"] is ours


def test_a_tree_that_does_not_import_is_a_setup_error(tmp_path):
    (tmp_path / "components").mkdir()
    (tmp_path / "components" / "__init__.py").write_text("raise RuntimeError('broken on purpose')\n")
    with pytest.raises(SetupError, match="the base tree .* does not import: RuntimeError: broken on purpose"):
        Tree("base", tmp_path, "f" * 40).load()
    assert "components" not in sys.modules or "broken" not in str(sys.modules["components"].__file__)


def test_unknown_revision_is_a_setup_error():
    with pytest.raises(SetupError, match="BASE='no-such-rev' is not a git revision"):
        resolve("no-such-rev")
    assert len(resolve("HEAD")) == 40


# --- the command: setup problems, one line, exit 2, before any timing ----------------------------------------

@pytest.mark.parametrize("args,message", [
    (["no-such-rev", "--no-callgrind"], "BASE='no-such-rev' is not a git revision of"),
    (["no-such-rev", "--merge-base"], "BASE='no-such-rev' is not a git revision of"),
    (["HEAD", "-k", "zzz"], "-k zzz matches no case of --cases default"),
    (["HEAD", "--rounds", "3"], "--rounds=3 must be at least 6"),
    (["HEAD", "--min-rounds", "4", "--rounds", "40"], "--min-rounds=4: is too few for a 95% interval held over"),
    (["HEAD", "--min-rounds", "20", "--rounds", "12"], "--min-rounds=20: is more than max_rounds=12"),
    (["HEAD", "--threshold", "0"], "--threshold=0 must be a percentage in (0, 100)"),
    (["HEAD", "--callgrind-threshold", "150"], "--callgrind-threshold=150 must be a percentage in (0, 100)"),
    ([], "BASE is required"),
    (["--history", "/no/such/folder", "block/gpt2/forward"], "--history /no/such/folder: not a folder"),
])
def test_setup_problems_are_one_line_and_exit_2(args, message, capsys):
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("blockbench regress: error: ") and message in lines[0]
    assert captured.out == ""  # nothing was timed


def test_a_report_folder_that_cannot_be_written_is_a_setup_problem(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(["HEAD", "-k", "norm/rmsnorm/forward", "--out", str(blocker)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1] == (f"blockbench regress: error: --out {blocker}: cannot "
                                                    "write the reports there (File exists)")
    assert captured.out == ""


def test_the_command_exits_2_with_one_line():
    proc = subprocess.run([*PROG, "no-such-rev"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"blockbench regress: error: BASE='no-such-rev' is not a git revision of {REPO} "
        "(try HEAD~1, origin/main, a tag or a commit)"]


def test_list_prints_the_selected_cases():
    proc = subprocess.run([*PROG, "--list", "--cases", "ci"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == [components.name for components in select("ci")]


# --- reports ------------------------------------------------------------------------------------------------

def fake_report(ratio: float = 1.0, lo: float = 0.99, hi: float = 1.01, cg: float | None = None) -> dict:
    case = {"name": "norm/rmsnorm/forward", "counted": True, "ratio": ratio, "lo": lo, "hi": hi,
            "verdict": verdict(Interval(ratio, lo, hi, 0.96), 0.05), "base_median_s": 1e-4}
    if cg is not None:
        case["callgrind"] = {"base": 1e6, "head": 1e6 * cg, "ratio": cg,
                             "verdict": "regression" if cg > 1.01 else "unchanged"}
    return {"base": {"asked": "HEAD~1", "revision": "a" * 40}, "head": {"revision": "b" * 40},
            "threshold_pct": 5.0, "callgrind_threshold_pct": 1.0, "rounds": 15, "case_confidence": 0.99,
            "min_run_time": 0.02,
            "threads": 1, "torch": "2.13", "wall_s": 3.0, "callgrind_note": "", "intended_note": "",
            "time": "2026-12-01T00:00:00+0000", "cases": [case]}


def test_regression_lines_name_the_case_ratio_and_interval_for_each_signal():
    assert outcome_lines.regression_lines(fake_report()) == []
    lines = outcome_lines.regression_lines(fake_report(1.2, 1.1, 1.3, cg=1.05))
    assert lines == ["regression: norm/rmsnorm/forward: time head/base 1.200 [1.100, 1.300] (> 1 + 5%)",
                     "regression: norm/rmsnorm/forward: instructions head/base 1.0500 (> 1 + 1%)"]


def test_a_case_the_head_cannot_run_fails_the_check_and_one_the_base_cannot_is_not_compared(tmp_path):
    import argparse

    from ablations.regress.cases import Case
    from ablations.regress.trees import head_tree

    tree = head_tree().load()
    base = base_tree("HEAD", tmp_path / "base").load()

    def base_only_breaks(components: object) -> object:
        if sys.modules["components"] is base.components:
            raise TypeError("an API this tree lacks")
        return next(x for x in all_cases() if x.name == "norm/rmsnorm/forward").build(components)

    args = argparse.Namespace(rounds=6, min_rounds=None, min_run_time=0.01, warmup=1, threshold=5.0)
    row, _ = measure_case.measure(Case("norm", "broken", "forward", base_only_breaks, (1,)), base, tree, args, 0.95)
    assert row["verdict"] == "not compared" and "the base cannot run it: TypeError" in row["reason"]

    def breaks_on_purpose(components: object) -> object:
        raise TypeError("an API neither tree has")

    # The head's failure is reported whatever the base can do.
    row, _ = measure_case.measure(Case("norm", "broken", "forward", breaks_on_purpose, (1,)), base, tree, args, 0.95)
    assert row["verdict"] == "failure" and "the head cannot run it: TypeError" in row["error"]

    def head_only_breaks(components: object) -> object:
        if sys.modules["components"] is tree.components:
            raise RuntimeError("head broke it")
        return next(x for x in all_cases() if x.name == "norm/rmsnorm/forward").build(components)

    row, _ = measure_case.measure(Case("norm", "x", "forward", head_only_breaks, (1,)), base, tree, args, 0.95)
    assert row["verdict"] == "failure"
    report = fake_report()
    report["cases"] = [row]
    assert outcome_lines.regression_lines(report) == ["failure: norm/x/forward: the head cannot run it: RuntimeError: "
                                                "head broke it"]


def test_reports_are_written_and_the_side_json_is_pytest_benchmark_compatible(tmp_path, monkeypatch):
    step_summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    report = fake_report()
    sides = {s: report_files.benchmark_json(report, s, {"norm/rmsnorm/forward": [1e-4, 1.1e-4, 0.9e-4]})
             for s in ("base", "head")}
    report_files.write_all(report, sides, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "regress.json").read_text())["cases"][0]["name"] == "norm/rmsnorm/forward"
    assert "no regression" in (tmp_path / "out" / "summary.md").read_text()
    assert step_summary.read_text() == (tmp_path / "out" / "summary.md").read_text() + "\n"
    bench = json.loads((tmp_path / "out" / "base.benchmark.json").read_text())
    assert bench["benchmarks"][0]["stats"]["median"] == pytest.approx(1e-4)
    # pytest-benchmark's own command reads both files
    proc = subprocess.run([sys.executable, "-m", "pytest_benchmark", "compare", str(tmp_path / "out" /
                           "base.benchmark.json"), str(tmp_path / "out" / "head.benchmark.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "norm/rmsnorm/forward" in proc.stdout


def test_the_summary_names_what_was_timed_truthfully():
    # A check of uncommitted changes against HEAD is not "head X against base X".
    assert summary.head_text("b" * 40 + "+working tree") == f"working tree with uncommitted changes on `{'b' * 12}`"
    assert summary.head_text("b" * 40) == f"head `{'b' * 12}`"
    assert summary.base_text({"revision": "a" * 40, "asked": "HEAD"}) == f"base `{'a' * 12}` (`HEAD`)"
    merged = {"revision": "a" * 40, "asked": "origin/main", "merge_base_of": "origin/main"}
    assert summary.base_text(merged) == f"base `{'a' * 12}` (merge base of `origin/main` and HEAD)"
    report = fake_report()
    report["head"]["revision"] += "+working tree"
    assert summary.markdown(report).splitlines()[0] == (
        f"## Performance check: working tree with uncommitted changes on `{'b' * 12}` against base `{'a' * 12}` "
        "(`HEAD~1`)")


def test_sequential_rounds_stop_a_decided_case_early_and_give_a_straddling_one_its_budget(monkeypatch):
    import argparse

    from ablations.regress.paired import decided

    assert decided(Interval(1.2, 1.1, 1.3, 0.99), 0.05) and decided(Interval(1.0, 0.99, 1.01, 0.99), 0.05)
    assert not decided(Interval(1.05, 1.02, 1.08, 0.99), 0.05)  # straddles 1 + 5%: more rounds could settle it
    rule = measure_case.rounds_rule(argparse.Namespace(rounds=40, min_rounds=10), 0.99)
    assert rule.looks[0] == 10 and rule.looks[-1] == 40 and rule.look_confidence > 0.99
    assert measure_case.rounds_rule(argparse.Namespace(rounds=12, min_rounds=None), 0.99).looks == [12]
    case = next(candidate for candidate in all_cases() if candidate.name == "norm/rmsnorm/forward")
    tree = head_tree().load()
    base = Tree("base", tree.root, tree.revision, tree.modules)

    def rounds_of(ratio_at: Callable[[int], float]) -> Callable[..., PairedTiming]:
        """A stand-in for the timer: round i's head/base ratio is ``ratio_at(i)``; asks ``until`` as the real one."""
        def time_case(head: object, base: object, *, rounds: int, until: Callable | None = None,
                      **_: object) -> PairedTiming:
            a: list[float] = []
            for i in range(rounds):
                a.append(ratio_at(i))
                if until is not None and until(list(a)):
                    break
            return PairedTiming(a, [1.0] * len(a))
        return time_case

    args = argparse.Namespace(rounds=40, min_rounds=10, min_run_time=0.001, warmup=1, threshold=5.0)
    monkeypatch.setattr(measure_case, "time_case", rounds_of(lambda i: 1.0 + 0.01 * (-1) ** i))  # clearly within ±5%
    row, _ = measure_case.measure(case, base, tree, args, 0.95)
    assert row["rounds"] == 10 and row["stopped"] == "decided" and row["verdict"] == "unchanged"
    # straddles 1.05 throughout
    monkeypatch.setattr(measure_case, "time_case", rounds_of(lambda i: 1.05 + 0.02 * (-1) ** i))
    row, _ = measure_case.measure(case, base, tree, args, 0.95)
    assert row["rounds"] == 40 and row["stopped"] == "budget"
    monkeypatch.setattr(measure_case, "time_case", rounds_of(lambda i: 1.0))
    row, _ = measure_case.measure(case, base, tree, argparse.Namespace(**{**vars(args), "min_rounds": None}), 0.95)
    assert row["rounds"] == 40 and row["stopped"] == "fixed"
    text = summary.markdown({**fake_report(), "min_rounds": 10, "rounds": 40,
                             "cases": [{**fake_report()["cases"][0], "rounds": 40, "stopped": "budget"}]})
    assert "10 to 40 paired rounds" in text and "| 40 (budget) |" in text


def test_merge_base_is_where_head_left_the_branch():
    assert revisions.merge_base("HEAD") == resolve("HEAD")
    assert revisions.merge_base("HEAD~1") == resolve("HEAD~1")


def test_history_keeps_machines_and_torch_versions_apart(tmp_path):
    runs = [("cpu A, 2 cores, x86_64", "2.13", 1.0), ("cpu B, 16 cores, x86_64", "2.13", 1.3),
            ("cpu A, 2 cores, x86_64", "2.14", 1.1), ("cpu A, 2 cores, x86_64", "2.13", 1.01)]
    for i, (machine, version, ratio) in enumerate(runs):
        report = fake_report(ratio, ratio - 0.01, ratio + 0.01)
        report.update(machine=machine, torch=version, time=f"2026-12-0{i + 1}T00:00:00+0000")
        report_files.write_all(report, {}, tmp_path / f"run{i}")
    table = history.history_table(tmp_path, "norm/rmsnorm/forward")
    assert list(table["series"]) == ["cpu A, 2 cores, x86_64; torch 2.13", "cpu B, 16 cores, x86_64; torch 2.13",
                                     "cpu A, 2 cores, x86_64; torch 2.14", "cpu A, 2 cores, x86_64; torch 2.13"]
    assert table["series"].nunique() == 3
    png = history.history_figure(table, "norm/rmsnorm/forward", 5.0, tmp_path / "h.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert check.machine().count(",") >= 2  # model, cores, architecture


def test_history_draws_a_case_over_stored_runs(tmp_path):
    for i, ratio in enumerate((1.0, 1.02, 1.12)):
        report = fake_report(ratio, ratio - 0.01, ratio + 0.01)
        report["time"] = f"2026-12-0{i + 1}T00:00:00+0000"
        report_files.write_all(report, {}, tmp_path / f"run{i}")
    table = history.history_table(tmp_path, "norm/rmsnorm/forward")
    assert list(table["ratio"]) == [1.0, 1.02, 1.12]
    assert list(table["verdict"]) == ["unchanged", "unchanged", "regression"]
    png = history.history_figure(table, "norm/rmsnorm/forward", 5.0, tmp_path / "h.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_callgrind_reads_each_dump_total(tmp_path):
    for i, total in enumerate((1200, 3400), 1):
        (tmp_path / f"callgrind.out.{i}").write_text(f"events: Ir\nfn=x\n0 5\nsummary: {total}\ntotals: {total}\n")
    (tmp_path / "cases.json").write_text(json.dumps([["a", str(tmp_path / "callgrind.out.1"), 10],
                                                      ["b", str(tmp_path / "callgrind.out.2"), 2]]))

    class Done:
        returncode = 0

        def wait(self) -> int:
            return 0

    assert callgrind.finish(Done(), tmp_path) == {"a": 120.0, "b": 1700.0}


def test_a_callgrind_failure_leaves_the_timing_verdicts_and_says_so(tmp_path, monkeypatch, capsys):
    import argparse

    def fails(proc: object, out: Path) -> dict:
        raise RuntimeError("callgrind worker exited 1: vgdb: cannot attach")

    monkeypatch.setattr(callgrind, "available", lambda: None)
    monkeypatch.setattr(callgrind, "start", lambda *a, **k: None)
    monkeypatch.setattr(callgrind, "finish", fails)
    rows = [{"name": "norm/rmsnorm/forward", "counted": True, "ratio": 1.0, "verdict": "unchanged"}]
    tree = head_tree().load()
    note = instruction_counts.count_instructions(rows, tree, tree, argparse.Namespace(no_callgrind=False), tmp_path)
    assert note == "Instruction counts: failed (callgrind worker exited 1: vgdb: cannot attach); timing alone."
    assert "callgrind" not in rows[0] and rows[0]["verdict"] == "unchanged"
    assert capsys.readouterr().err.strip().endswith("timing alone")


# --- groups: a slowdown of shared code, seen in every variant's rounds pooled ---------------------------------

def test_cases_pool_by_component_and_mode_and_the_family_counts_each_group():
    from ablations.regress.paired import group_name, groups_of, tests_in

    assert group_name("block/llama2/forward") == "block/*/forward"
    assert group_name("block/mha-w64/decode") == "block/*/decode"
    names = ["norm/layernorm/forward", "block/gpt2/forward", "block/rmsnorm/forward", "block/gpt2/train"]
    # A group of one case is that case's own verdict, not a second test of the same rounds.
    assert groups_of(names) == {"block/*/forward": ["block/gpt2/forward", "block/rmsnorm/forward"]}
    assert tests_in(names) == 5
    default = [case.name for case in select("default")]
    blocks = [n for n in default if n.startswith("block/") and n.endswith("/forward")]
    assert groups_of(default)["block/*/forward"] == blocks and len(blocks) == len(block_variants())
    assert tests_in(default) == len(default) + len(groups_of(default))


def test_a_shared_slowdown_each_case_hides_behind_one_low_round_is_caught_by_its_group():
    from ablations.regress.paired import case_confidence, pooled_rows

    rng = random.Random(3)
    level = case_confidence(91)
    rows = []
    for i in range(16):
        ratios = [1.04 + rng.gauss(0, 0.01) for _ in range(11)] + [0.99]  # one round a neighbour spoiled
        iv = median_interval(ratios, level)
        assert iv.lo < 1.02  # the case alone: [min, max] at this level, so it cannot say
        rows.append({"name": f"block/v{i}/forward", "ratios": ratios})
    rows.append({"name": "block/broken/forward", "reason": "the base cannot run it", "verdict": "not compared"})
    rows.append({"name": "norm/rmsnorm/forward", "ratios": [1.0] * 12})  # alone in its group: no group row
    (group,) = pooled_rows(rows, 0.02, level)
    assert group["name"] == "block/*/forward" and group["cases"] == 16 and group["rounds"] == 192
    assert group["verdict"] == "regression" and 1.02 < group["lo"] < group["ratio"] < group["hi"] < 1.06
    # Sequential rounds: only each case's first rounds pool (how many more it took depended on its rounds).
    assert pooled_rows(rows, 0.02, level, first=6)[0]["rounds"] == 96
    report = dict(fake_report(), threshold_pct=2.0, groups=[group])
    assert outcome_lines.regression_lines(report) == [
        "regression: block/*/forward (16 cases, 192 rounds pooled): time head/base "
        f"{outcome_lines.fmt_interval(group)} (> 1 + 2%)"]
    text = summary.markdown(report)
    assert ("**regression**: 0 of 1 case regressed, 1 passed, 0 not judged; 1 of 1 group regressed, 0 passed, 0 not "
            "judged." in text and "| `block/*/forward` | 16 | 192 |" in text)


def test_pooled_rounds_of_identical_code_keep_the_stated_coverage():
    """Heavy-tailed round noise (Student t with 2 degrees of freedom at a 2.5% scale: rare rounds far out, as the
    rounds here have), 16 cases of 12 rounds each pooled: the 90% interval must cover 1 in at least 90% of checks."""
    from ablations.regress.paired import pooled_rows

    rng = random.Random(11)

    def t2() -> float:
        return rng.gauss(0, 1) / math.sqrt((rng.gauss(0, 1) ** 2 + rng.gauss(0, 1) ** 2) / 2)

    checks, covered = 2000, 0
    for _ in range(checks):
        rows = [{"name": f"block/v{i}/forward", "ratios": [math.exp(0.025 * t2()) for _ in range(12)]}
                for i in range(16)]
        (g,) = pooled_rows(rows, 0.02, 0.90)
        covered += g["lo"] <= 1 <= g["hi"]
    # 3 standard errors of a binomial proportion below 90% would still be a failure of the rule, not chance.
    assert covered / checks >= 0.90 - 3 * math.sqrt(0.9 * 0.1 / checks)
