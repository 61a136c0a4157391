"""Every reading comes from the 95% intervals the tables print (issue: a claims row read "slower (1.53×)" from
quartiles while its 95% interval was [0.930, 2.121]), and no reading explains itself with text keyed to a version
or a device."""

from __future__ import annotations

import pandas as pd

from ablations.report.readings import ratio_text, speed_cost, speed_word

# The quick start's RMSNorm row: quartiles that cleared the A/A's p75 by 0.002, a 95% interval that holds 1.
WIDE = {"train": 1.53, "train_lo": 1.228, "train_hi": 1.71, "train_ci_lo": 0.930, "train_ci_hi": 2.121,
        "train_aa_lo": 0.98, "train_aa_hi": 1.226, "train_aa_ci_lo": 0.95, "train_aa_ci_hi": 1.06}


def _old_rule(r: dict, key: str) -> str:
    """The rule before: the p25-p75 spread against 1 and the A/A spread."""
    return "slower" if r[f"{key}_lo"] > max(1.0, r[f"{key}_aa_hi"]) else "other"


def test_a_wide_interval_the_quartile_rule_called_slower_now_reads_no_difference():
    r = pd.Series(WIDE)
    assert _old_rule(WIDE, "train") == "slower"
    word = speed_word(r, "train")
    assert word.startswith("no measurable difference"), word
    assert "[0.93, 2.12]" in word


def test_slower_and_faster_need_the_interval_clear_of_1_and_of_the_aa_interval():
    assert speed_word(pd.Series({**WIDE, "train_ci_lo": 1.08, "train_ci_hi": 1.12}), "train").startswith("slower")
    # Clear of 1 but inside the baseline's own A/A interval: the noise floor, not a difference.
    inside = speed_word(pd.Series({**WIDE, "train": 1.04, "train_ci_lo": 1.02, "train_ci_hi": 1.05}), "train")
    assert inside.startswith("no measurable difference")
    faster = {**WIDE, "train": 0.8, "train_ci_lo": 0.78, "train_ci_hi": 0.83}
    assert speed_word(pd.Series(faster), "train").startswith("faster")


def test_a_table_without_intervals_gets_no_reading_and_its_brackets_are_never_quartiles():
    r = pd.Series({k: v for k, v in WIDE.items() if "_ci_" not in k})
    assert speed_word(r, "train").startswith("not judged")
    assert "[" not in ratio_text(r, "train") and "spread p25–p75" in ratio_text(r, "train")
    assert ratio_text(pd.Series(WIDE), "train") == "1.53× [0.93, 2.12]"


def test_no_cause_keyed_to_a_version_or_device():
    slower = {**WIDE, "train_ci_lo": 1.4, "train_ci_hi": 1.6, "fwd": 1.0, "fwd_lo": 0.99, "fwd_hi": 1.01,
              "fwd_ci_lo": 0.98, "fwd_ci_hi": 1.02, "device": "cpu", "dtype": "float32", "compile": False,
              "torch": "2.13.0+cpu", "sweep": "norm", "shape": "4x512", "baseline": "gpt2"}
    _, reading = speed_cost(pd.Series(slower))
    assert "slower" in reading
    for keyed in ("2.13", "composite", "autograd", "cpu", "compile"):
        assert keyed not in reading, reading
