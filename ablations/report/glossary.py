"""The glossary: every term the README, the report's headings and its table headers use, one or two sentences each.

``docs/glossary.md`` is generated from ``GLOSSARY`` (``<!-- generated: glossary -->``), so the page and the code
cannot disagree; ``tests/report/test_glossary.py`` fails when a column of the report's first tables, or a term the
verdict block and the README lean on, has no entry. The loss's unit is named one way throughout: nats per byte
(nats/byte), or nats per token on a token corpus.
"""

from __future__ import annotations

from ablations.report.buys import SCENARIO_COLUMN

GLOSSARY: dict[str, str] = {
    # What a run is made of
    "choice": "One of the design decisions that separate GPT-2's block from Llama-2's (positions, norm, FFN, KV heads, "
              "biases), or one that came later; a Hydra config group with one value per option.",
    "flip": "One choice moved from GPT-2's value to another, everything else left at GPT-2's block: "
            "\"LayerNorm → RMSNorm\".",
    "baseline": "The block every variant is paired with: GPT-2's, unless a sweep says `baseline=llama2`.",
    "point": "One configuration a sweep runs: a variant timed and trained against its baseline.",
    "sweep": "A set of points run together (`+sweep=NAME`); `blockbench list` names every sweep.",
    "main job": "`python -m ablations +sweep=norm` at the default profile: the command a newcomer runs first.",
    "smoke profile": "`profile=smoke`: tiny models, few rounds and seeds; it checks that every stage runs and its "
                     "numbers are not for quoting.",
    "extended tier": "The tests `pytest -m extended` adds: end-to-end runs whose path a faster test also takes.",
    # Timing
    "train step ×": "The variant's forward-and-backward time over the baseline's, timed paired in one process; "
                    "below 1 is faster.",
    "decode ×": "The variant's time for one generated token (a step against a filled KV cache) over the baseline's.",
    "ABBA": "The order of a paired timing round: variant, baseline, baseline, variant, so drift within a round "
            "cancels.",
    "A/A": "The baseline timed against itself; its interval is the noise floor a variant's ratio is read against.",
    "noise floor": "How far the A/A ratio strays from 1: a variant's ratio inside it is no measurable difference.",
    "no measurable difference": "A time ratio whose 95% interval holds 1.",
    "overhead-bound": "A decode step at under half the machine's memory bandwidth: launches and framework overhead, "
                      "not the bytes the choice moves, set its time; its ratio gets \"no verdict\" unless it moved "
                      "as its bytes do.",
    "operator calls": "The operators one eager decode step dispatches (views left out): about one kernel launch "
                      "each, the fixed cost an overhead-bound step pays; a CUDA graph replays them as one launch.",
    "graph replay": "A decode step captured once as a CUDA graph and replayed, as serving stacks run it "
                    "(`profile.graphs`, on for CUDA): the ratio of the bytes, not of the launch path.",
    "alone": "A component a choice swaps (its norm, its FFN) timed by itself, forward and backward, against the one it "
             "replaces; where it asks no more of the machine yet measures slower, the library's kernel is named.",
    "roofline bound": "The time a kernel would take at the machine's measured peak FLOP rate or memory bandwidth, "
                      "whichever binds; a measured time near it leaves the kernel little to gain.",
    "params": "The variant's parameters against the baseline's, in percent.",
    "train FLOPs": "The variant's training FLOPs per token over the baseline's (torch's FLOP counter).",
    "KV bytes/token": "The bytes of K and V cache one token adds to the timed block (one layer, at the timing's "
                      "dtype); GQA shares them across query heads.",
    # Quality
    "nats/byte": "The loss's unit: cross-entropy in nats per byte of text (the model reads bytes); bits per byte "
                 "is this over ln 2.",
    "Δ loss [CI]": "The variant's final validation loss minus the baseline's, paired by seed, with its interval at "
                   "the Holm level; below 0 is better.",
    "verdict": "better or worse where the Holm-adjusted paired test finds a difference; otherwise no detectable "
               "difference, or \"within ±m\" where the whole interval lies inside the margin m.",
    "Holm level": "The confidence each comparison is held to so that a family of comparisons (a sweep's) errs at "
                  "most 5% of the time (Holm's step-down adjustment).",
    "could have detected": "The smallest true difference the comparison would have found with 80% power: what a "
                           "\"no detectable difference\" rules out.",
    "seeds": "Independent training runs of one arm; a point adds seeds until its comparison is answered or its "
             "budget (8) is spent.",
    "compute multiplier [CI]": "k: how many times the training FLOPs the baseline needs to reach the variant's "
                               "final loss, read on the baseline's loss-against-compute curve; above 1 the "
                               "variant buys compute. Beside a Δ its interval is at the Δ's Holm level.",
    "k in steps": "The compute multiplier counted in training steps instead of FLOPs; it differs where the arms' "
                  "FLOPs per step differ (GQA).",
    "curve seeds": "The seeds the baseline's compute curve is trained on (3 by default); k reads these, Δ may "
                   "read more.",
    "knot": "One budget of the baseline's compute curve (0.5× to 4× the steps, half a doubling apart).",
    "known answer": "A reading whose true multiplier is known (a knot left out and read on the curve without it, or "
                    "the baseline trained between knots); the multipliers are trusted where every one holds.",
    "time to loss, measured": "How many times sooner in wall time the variant reaches the baseline's final loss: "
                              "k in steps over the measured train-step ratio.",
    SCENARIO_COLUMN: "A scenario, not a prediction: k from the small model, assumed to hold at 7B, over the "
                     "roofline's train-step ratio for Llama-2-7B on one H100.",
    "bytes per parameter": "Training bytes over the baseline's parameters: how far a model has trained "
                           "(compute-optimal is about 20).",
    "cosine schedule": "The learning rate warmed up, then decayed along a cosine to a tenth of its peak over the "
                       "run's own steps: a full schedule, each length its own run.",
    "wsd": "Warmup-stable-decay: the rate held after warm-up and decayed over the last fifth of the steps, so one run "
           "trains every shorter length as a cool-down branch; a stand-in for full schedules.",
    "horizon": "One training length at a fixed width in the horizon sweep, told by its bytes per parameter.",
    "rung": "One model width of the transfer sweep (and of the ladder sweep, one choice added at a time).",
    "transfer": "The verdicts the same comparison reached at other widths and on other texts (the transfer sweep).",
    "published": "What the sources a choice's claim cites say of the loss.",
    "agrees": "Whether this run's verdict matches the published one; a published \"no worse\" agrees only where "
              "the interval rules out a larger harm.",
    "fast step": "The quality run's training step as the machine runs it fastest: bf16 products where they pay, "
                 "the attention core's precision, compiled where it pays (`train.precision`, `train.compile`).",
    "tuned rate": "An arm's own learning rate, chosen by the learning-rate scan on scan seeds and committed as "
                  "`train.tuned_lr`; an untuned arm trains at the shared rate.",
    "scan seeds": "The seeds the learning-rate scan chooses on; never the evaluation seeds a verdict is judged on.",
    "edge margin": "The scan's rule (`train.lr_scan_margin`): a rate is scored by the worse of its own loss and the "
                   "next rate up's, so the choice keeps a half-octave from where the loss starts to climb.",
    "fresh seeds": "Seeds neither the scan nor an earlier check saw; a rate rule is judged on them before its rates "
                   "are committed (`scripts/fresh_seed_check.py`).",
}


def glossary_markdown() -> str:
    """The page's body: one bullet per term, in ``GLOSSARY``'s order."""
    return "\n".join(f"- **{term}**: {text}" for term, text in GLOSSARY.items())
