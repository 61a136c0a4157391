"""Seeds until answered: common random init, the stopping rule's error rates by simulation, and a sequential point
end to end (its baseline's seeds shared through the ledger, a diverged seed a recorded outcome)."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest
import torch

import ablations.quality.arms as quality_arms
import ablations.quality.run as quality_run
from ablations.config.schema import TrainConfig
from ablations.quality.inference import PairedTest
from ablations.quality.ledger import arm_id
from ablations.quality.seeds import BOUNDED, BUDGET, FOUND, SeedRule, family_of, family_size, seed_rule, simulate
from ablations.quality.stats import summarize
from ablations.results.identity import point_identity
from ablations.results.rows import Rows
from ablations.results.store import write_point
from ablations.results.table import collect
from ablations.runner import check_point, plan_point
from components import build_lm, common_random_init
from components.config import ConfigError
from tests.quality.helpers import composed

SEQUENTIAL = ("train.target_mde=0.05", "train.min_seeds=3", "train.max_seeds=5", "train.common_init=true",
              "train.steps=6", "train.eval_interval=6", "train.extrapolation=[1]")


def _quality_model(*overrides: str):
    cfg = composed(*overrides)
    return plan_point(cfg).quality.arch


def _shared(a: torch.nn.Module, b: torch.nn.Module) -> dict[str, bool]:
    """For each weight matrix both models have at the same name and shape: whether it is identical."""
    pb = dict(b.named_parameters())
    return {n: torch.equal(p, pb[n]) for n, p in a.named_parameters()
            if p.ndim >= 2 and n in pb and pb[n].shape == p.shape}


@pytest.mark.parametrize("flip", ["ffn=swiglu", "norm=rmsnorm", "attn=gqa", "pos=rope", "bias=off"])
def test_modules_two_arms_share_start_identical_at_a_seed(flip):
    torch.manual_seed(0)
    base = build_lm(_quality_model())
    torch.manual_seed(0)
    variant = build_lm(_quality_model(flip))
    for m in (base, variant):
        common_random_init(m, seed=7)
    shared = _shared(base, variant)
    assert shared and all(shared.values()), [n for n, same in shared.items() if not same]
    # The embedding and the attention projections of every layer are among them (what a flip does not touch).
    assert "embed.weight" in shared
    # Another seed draws other weights.
    again = build_lm(_quality_model())
    common_random_init(again, seed=8)
    assert not torch.equal(again.embed.weight, base.embed.weight)


def test_one_global_stream_shifts_every_draw_after_the_first_module_that_differs():
    # Why common random numbers: without them SwiGLU's third matrix moves every later layer's draws.
    torch.manual_seed(0)
    base = build_lm(_quality_model())
    torch.manual_seed(0)
    variant = build_lm(_quality_model("ffn=swiglu"))
    later = {n: same for n, same in _shared(base, variant).items() if ".blocks.1." in n}
    assert later and not any(later.values())


def test_common_init_keeps_the_gpt2_init_scales():
    model = build_lm(_quality_model())
    common_random_init(model, seed=0)
    std = model.arch.model.init_std
    for name, p in model.named_parameters():
        if name.endswith(("attn.out.weight", "ffn.down.weight")):
            assert abs(p.std().item() - std / math.sqrt(2 * model.arch.model.n_layers)) < 0.2 * std
        elif p.ndim >= 2:
            assert abs(p.std().item() - std) < 0.1 * std


@pytest.mark.parametrize("family", [1, 4])
def test_no_difference_means_at_most_alpha_family_wise_under_the_stopping(family):
    rule = SeedRule(tuple(range(12)), 3, target_mde=1.5)
    sweeps = 1500
    rates = simulate(rule, 0.0, family, sweeps, seed=family)
    assert rates["fwer"] <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sweeps)
    assert rates[BOUNDED] > 0.5  # and the rule does answer: most comparisons stop on "no difference that large"


@pytest.mark.parametrize("family", [1, 4])
def test_a_difference_of_the_target_is_rarely_called_bounded(family):
    # "No difference as large as the target" is a claim of 80% power at the target: under a true difference of
    # exactly the target, the rule must not stop on it more often than 20% (it is far rarer: 5 to 6% in
    # `python -m ablations.quality.seeds`).
    rule = SeedRule(tuple(range(12)), 3, target_mde=1.5)
    sweeps = 800
    rates = simulate(rule, 1.5, family, sweeps, seed=10 + family)
    assert rates[BOUNDED] <= 0.2
    assert rates[FOUND] > 0.5


def test_the_looks_and_levels():
    rule = SeedRule(tuple(range(12)), 3, 0.02)
    assert rule.looks == [3, 5, 8, 12]
    assert rule.level(6) == pytest.approx(0.05 / 6 / 4)
    assert rule.stop(4, PairedTest(1.0, 0.001, 4, 1e-9), 1) is None  # not a look
    assert rule.stop(5, PairedTest(1.0, 0.001, 5, 1e-9), 1) == FOUND
    assert rule.stop(12, PairedTest(0.0, 1.0, 12, 0.9), 1) == BUDGET
    fixed = SeedRule((0, 1, 2), 3)
    assert fixed.looks == [3] and fixed.stop(2, None, 1) is None and fixed.stop(3, None, 1) == "fixed"
    assert family_of("all", 6) == 6 and family_of("ladder", 6) == 11


@pytest.mark.parametrize(("settings", "needle"), [
    ({"target_mde": 0.0, "min_seeds": 3, "max_seeds": 8}, "train.target_mde=0.0 must be > 0"),
    ({"target_mde": 0.02, "min_seeds": None, "max_seeds": 8}, "needs train.min_seeds and train.max_seeds"),
    ({"target_mde": 0.02, "min_seeds": 2, "max_seeds": 8}, "3 <= min_seeds <= max_seeds"),
    ({"target_mde": 0.02, "min_seeds": 5, "max_seeds": 4}, "3 <= min_seeds <= max_seeds"),
    ({"target_mde": None, "min_seeds": 3, "max_seeds": None}, "apply with train.target_mde"),
    ({"target_mde": 0.02, "min_seeds": 3, "max_seeds": 3, "seeds": [0, 1, 2, 3]}, "more seeds than"),
])
def test_bad_seed_settings_are_one_line(settings, needle):
    tc = TrainConfig(name="test", **{"seeds": [0, 1, 2], **settings})
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace(")", r"\)")) as err:
        seed_rule(tc)
    assert "\n" not in str(err.value)


def test_seeds_continue_after_the_listed_ones():
    rule = seed_rule(TrainConfig(name="test", seeds=[5, 2], target_mde=0.02, min_seeds=3, max_seeds=5))
    assert rule.seeds == (5, 2, 6, 7, 8)


def test_fixed_seeds_keep_the_point_identity_of_before():
    before = point_identity(composed("train.common_init=false", "train.final_eval_batches=null"))
    assert not {"target_mde", "min_seeds", "max_seeds", "common_init", "final_eval_batches", "lr_check"} & set(
        before["train"])
    after = point_identity(composed(*SEQUENTIAL))
    assert after["train"]["target_mde"] == 0.05 and after["train"]["common_init"] is True


def _point(cfg, variant: str, folder, trained: list) -> tuple[str, list[dict]]:
    rows = Rows(base={"sweep": "test", "variant": variant, "point": variant, "seed": 0, "baseline": "gpt2"})
    status = quality_run.run_quality(plan_point(cfg).quality, rows, torch.device("cpu"), folder)
    write_point(rows.rows, folder / "points" / f"{variant}.csv")
    return status, rows.rows


@pytest.fixture
def counted(monkeypatch):
    """Every training run, as (variant's quality model, seed); seed 3 of the RMSNorm arm diverges."""
    trained = []
    real = quality_arms.train

    def train(arch, corpus, tc, seed, *args, **kwargs):
        trained.append((arch.norm.name, seed))
        result = real(arch, corpus, tc, seed, *args, **kwargs)
        if arch.norm.name == "rmsnorm" and seed == 3:
            result.diverged_at, result.reason = 2, "training loss became nan at step 2"
        return result

    monkeypatch.setattr(quality_arms, "train", train)
    return trained


def test_a_sequential_point_pairs_with_the_baselines_seeds_and_records_how_it_stopped(tmp_path, counted,
                                                                                         monkeypatch):
    torch.set_num_threads(1)
    status, _ = _point(composed(*SEQUENTIAL), "gpt2", tmp_path, counted)
    assert status == "ok" and counted == [("layernorm", s) for s in (0, 1, 2)]  # the baseline: the first look
    counted.clear()
    # A target no 6-step model meets, and no difference found (CRN arms of 6 steps differ very consistently): the
    # point goes to its budget, training the baseline's next seeds itself and reading seeds 0-2 from the ledger.
    real = quality_run.paired_test
    monkeypatch.setattr(quality_run, "paired_test", lambda a, b: dataclasses.replace(real(a, b), p=1.0))
    status, rows = _point(composed(*SEQUENTIAL, "norm=rmsnorm", "train.target_mde=1e-6"), "rmsnorm", tmp_path,
                          counted)
    assert status == "ok"  # a diverged seed is an outcome of the point, not a failure
    assert counted == [("rmsnorm", 0), ("rmsnorm", 1), ("rmsnorm", 2), ("rmsnorm", 3), ("layernorm", 3),
                       ("rmsnorm", 4), ("layernorm", 4)]
    final = pd.DataFrame([r for r in rows if r["metric"] == "val_loss" and r["mode"] == "final"])
    own = final[final["variant"] == "rmsnorm"]
    assert set(own["stopped"]) == {BUDGET} and set(own["looks"]) == {2}
    assert own.loc[own["seed"] == 3, "status"].item() == "diverged"
    assert sorted(final.loc[final["variant"] == "gpt2", "seed"]) == [0, 1, 2, 3, 4]
    # The table keeps one copy of each baseline seed, and the verdict reads the four pairs both finished.
    table = collect(tmp_path)
    assert len(table[(table["variant"] == "gpt2") & (table["metric"] == "val_loss") & (table["mode"] == "final")]) == 5
    s = summarize(table)
    row = s[(s["metric"] == "val_loss") & (s["variant"] == "rmsnorm")].iloc[0]
    assert row["diff_n"] == 4 and row["looks"] == 2 and row["stopped"] == BUDGET and row["diverged"] == 1


def test_a_point_that_answers_stops_at_its_first_look(tmp_path, counted):
    torch.set_num_threads(1)
    _point(composed(*SEQUENTIAL), "gpt2", tmp_path, counted)
    counted.clear()
    # A generous target: three seeds bound the difference, and nothing more is trained.
    _, rows = _point(composed(*SEQUENTIAL, "ffn=swiglu", "train.target_mde=10"), "swiglu", tmp_path, counted)
    assert len(counted) == 3  # its own three seeds; the baseline's come from the ledger
    final = [r for r in rows if r["metric"] == "val_loss" and r["mode"] == "final" and r["variant"] == "swiglu"]
    assert {r["stopped"] for r in final} <= {BOUNDED, FOUND} and len(final) == 3


def test_baseline_rows_from_the_ledger_equal_the_trained_ones(tmp_path, counted):
    torch.set_num_threads(1)
    _, base_rows = _point(composed(*SEQUENTIAL), "gpt2", tmp_path, counted)
    cfg = composed(*SEQUENTIAL, "norm=rmsnorm", "train.target_mde=1e-6", "train.max_seeds=3")
    _, rows = _point(cfg, "rmsnorm", tmp_path, counted)
    ref = plan_point(cfg).quality.baseline
    assert ref.norm.name == "layernorm"
    mine = {(r["seed"], r["step"]): r["value"] for r in base_rows if r["metric"] == "val_loss"}
    copied = {(r["seed"], r["step"]): r["value"] for r in rows if r["metric"] == "val_loss" and r["variant"] == "gpt2"}
    assert copied and all(math.isclose(copied[k], mine[k]) for k in copied)


# A sweep's family is counted where it is composed: tests/ablations/test_config.py checks it for every sweep file
# (FAMILIES there); here a single run, and how it reaches every point: in the plan, or from the sweep's record.
@pytest.mark.parametrize(("argv", "family"), [(["norm=rmsnorm"], 1), (["+sweep=all"], 8)])
def test_the_run_counts_the_family_and_every_point_is_held_to_it(argv, family, tmp_path, monkeypatch):
    from ablations import cli, runner
    from ablations.results.sweep_record import SweepRecord, write_sweep_record

    sweep = cli.plan_run(argv)
    assert sweep.family == family and sweep.record.family == family
    assert {job.plan.quality.train.family for job in sweep.jobs} == {family}
    # A point a launcher runs in another process composes its own config and reads the family from the record.
    launched = []
    monkeypatch.setattr(runner, "run_plan", lambda plan: launched.append(plan) or "ok")
    monkeypatch.setattr(runner, "output_folder", lambda cfg: tmp_path)
    write_sweep_record(tmp_path, SweepRecord("norm", 2, family))
    assert runner.run_job(composed("norm=rmsnorm")) == "ok"
    assert launched[0].quality.train.family == family
    cfg = composed("norm=rmsnorm", f"train.family={family}")
    trains = plan_point(cfg).quality.train, plan_point(composed("norm=rmsnorm")).quality.train
    assert family_size(trains[0]) == family and family_size(trains[1]) == 1
    # The sweep's, not the point's: a point's identity and its arms are the same in any family.
    assert point_identity(cfg) == point_identity(composed("norm=rmsnorm"))
    assert arm_id(check_point(cfg), trains[0], "corpus") == arm_id(check_point(cfg), trains[1], "corpus")


def test_a_sequential_sweep_end_to_end(tmp_path, as_job, monkeypatch):
    """A norm sweep with a target, point by point as the command line runs it (tests/ablations/jobs.py), its rows and
    its report. The sweep's family of one comparison is what the sweep's plan holds (``train.family`` here)."""
    from ablations.cli import hydra_main
    from ablations.config.plan import SweepEnd
    from ablations.sweep.end import finish
    from tests.ablations.jobs import job_config

    out = tmp_path / "sweep"
    for num, norm in enumerate(("layernorm", "rmsnorm")):
        cfg = job_config(out, f"norm={norm}", "sweep_name=norm", "measure=false", "train.enabled=true",
                         "figures=false", "train.family=1", *SEQUENTIAL, num=num)
        as_job(cfg)
        assert hydra_main(cfg) == "ok"
    finish(SweepEnd(out, "norm", figures=False), ["ok", "ok"])
    table = pd.read_csv(out / "results.csv")
    final = table[(table["metric"] == "val_loss") & (table["mode"] == "final")]
    rms = final[final["variant"] == "rmsnorm"]
    assert set(rms["stopped"]) <= {FOUND, BOUNDED, BUDGET} and len(rms) in (3, 5)
    assert len(final[final["variant"] == "gpt2"]) == len(rms)  # one copy of each baseline seed the pairs used
    assert "Seeds were added" in (out / "REPORT.md").read_text()


def test_the_learning_rate_check_trains_one_seed_at_half_and_twice_the_rate_and_the_report_flags_it(tmp_path):
    from ablations.report.quality_sections import lr_check_table
    from ablations.report.tables import CASE_COLUMNS, split

    torch.set_num_threads(1)
    cfg = composed("train.steps=6", "train.eval_interval=6", "train.extrapolation=[1]", "train.lr_check=true")
    rows = Rows(base={"sweep": "test", "variant": "gpt2", "point": "gpt2", "seed": 0, "baseline": "gpt2"})
    assert quality_run.run_quality(plan_point(cfg).quality, rows, torch.device("cpu"), tmp_path) == "ok"
    table = pd.DataFrame(rows.rows)
    check = table[table["metric"] == "lr_check_loss"]
    lr = float(cfg.train.shared_lr)  # no scan tuned the smoke regime: every arm at the shared rate
    assert sorted(check["lr"]) == pytest.approx([lr / 2, 2 * lr]) and set(check["seed"]) == {0}
    shown = lr_check_table(table)
    assert list(shown.columns[2:5]) == ["lr × 0.5", "lr × 1", "lr × 2"]
    whole = table.assign(status="ok", **{c: "cpu" for c in CASE_COLUMNS if c not in table})
    assert lr_check_table(split(whole)[1]).equals(shown)  # the report's quality rows hold them
    losses = {r: float(shown.iloc[0][f"lr × {r}"]) for r in ("0.5", "1", "2")}
    best = min(losses, key=losses.get)
    assert shown.iloc[0]["best rate"] == ("its own" if best == "1" else f"‡ {best} × its own")


def test_tail_averaging_scores_the_mean_of_the_last_weights():
    from ablations.quality.optimizer import TailAverage

    model = torch.nn.Linear(2, 2)
    average = TailAverage(span=3)
    for value in (1.0, 2.0, 6.0):
        with torch.no_grad():
            model.weight.fill_(value)
        average.add(model)
    average.load_into(model)
    assert torch.allclose(model.weight, torch.full((2, 2), 3.0))


def test_a_ledger_seed_without_a_later_column_takes_the_value_its_arm_id_implies():
    """Rows a ledger wrote before ``train_steps`` existed read as the point's steps (the same arm id is the same
    training), so reused and newly trained seeds group together; a value the rows carry is kept."""
    from ablations.quality.ledger import reused

    base = {"point": "p-new", "train_steps": 250, "dtype": "bfloat16"}
    old = reused([{"point": "p-old", "metric": "val_loss", "value": 2.0}], base)
    assert old == [{"train_steps": 250, "point": "p-new", "metric": "val_loss", "value": 2.0}]
    kept = reused([{"point": "p-old", "train_steps": 60, "metric": "val_loss"}], base)
    assert kept[0]["train_steps"] == 60 and "dtype" not in kept[0]


def test_a_seed_another_sweep_trained_is_recorded_as_the_reading_sweeps():
    """A ledger carried from one sweep to another (``reuse_seeds``, a copied folder): the seed's rows say the reading
    point's sweep, file and why its arm trains at its rate, so the reading sweep's comparisons find them; the seed's
    numbers and revision stay its own."""
    from ablations.quality.ledger import reused

    base = {"sweep": "lr_scan", "point": "swiglu-new", "lr_source": "scanned: best 0.002", "variant": "swiglu"}
    seed = {"sweep": "all", "point": "swiglu-old", "lr_source": "shared: train.lr=0.002", "metric": "val_loss",
            "value": 2.19, "git_rev": "abc"}
    (row,) = reused([seed], base)
    assert (row["sweep"], row["point"], row["lr_source"]) == ("lr_scan", "swiglu-new", "scanned: best 0.002")
    assert (row["value"], row["git_rev"]) == (2.19, "abc")
