"""Quality: what each design choice does to the loss of a small byte-level LM trained on a 2-core CPU.

``data`` (offline corpus, split, windows), ``arch`` (the quality model from a point's choices), ``train``
(one seed's run), ``extrapolation`` (L, 2L, 4L), ``run`` (a point's seeds as rows), ``stats`` (mean, CI,
paired difference to the baseline, verdict).
"""
