"""Did the working tree make the timed library slower than a base revision? ``python -m ablations.regress``.

``trees`` (both revisions' ``components`` in one process) -> ``cases`` (what is timed) -> ``paired`` (rounds
interleaved, ratio, interval, verdict) and ``callgrind`` (instructions per call) -> ``summary`` (Markdown,
JSON, pytest-benchmark JSON, history figure); ``__main__`` is the command.
"""
