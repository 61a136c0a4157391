"""Carry each design choice to full-size models on named hardware: ``python -m ablations.predict``.

``scenarios`` builds the flips and the work of each scenario, ``table`` predicts and formats, ``__main__``
composes the Hydra config (``conf/predict.yaml``, groups ``hardware`` and ``model``, the user's folder's entries
first), ``calibrate`` writes this machine's ``hardware`` entry into the user's folder (``$BLOCKBENCH_HOME``).
"""
