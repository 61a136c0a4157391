"""What a run leaves behind: a point's rows (``rows``), what every row carries about where it ran
(``provenance``), and the atomic per-point store collected into one table (``store``); a row's variant name
(``variant_labels``) and the architecture it describes, read back (``row_arch``)."""
