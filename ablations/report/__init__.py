"""The report stage: tables of a finished sweep to REPORT.md, figures and the full-size model sizes.

``tables`` (load, combine, split) -> ``comparison`` (one row per variant, numbers) -> ``sections`` (each
section's table) and ``claims`` (the four claims against published figures) -> ``markdown`` (REPORT.md);
``figures`` (seaborn) and ``sizes`` (meta-device parameter, FLOP and KV counts) beside them; ``formatting``
turns numbers into cells. ``blockbench report`` (``python -m ablations.report``) is ``__main__``.
"""
