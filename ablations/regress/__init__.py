"""Did the working tree make the timed library slower than a base revision? ``python -m ablations.regress``.

``revisions`` (git) and ``trees`` (both revisions' ``components`` in one process) -> ``cases`` (what is timed, built
by ``builders`` at ``shapes`` into ``subjects``; ``architecture`` and ``tree_compat`` read a tree's classes) ->
``measure_case`` (``comparable``, then ``paired``: rounds interleaved, ratio, interval, verdict) and
``instruction_counts`` (``callgrind``) -> ``confirm`` -> ``summary`` (Markdown, from ``case_counts`` and
``outcome_lines``) and ``report_files`` (JSON, pytest-benchmark JSON); ``history`` draws a case over stored runs.
``check`` runs one check, ``cli`` is the command (``selection``, ``plugin_trees``), ``__main__`` starts it.
"""
