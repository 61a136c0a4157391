"""Tools that read two results tables: ``compare`` (did it get worse?) and ``repeat`` (would a rerun quote
the same number?)."""
