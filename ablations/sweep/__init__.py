"""Every run is a sweep, composed once: ``compose`` (every point's config composed and checked into its plan before
any runs), ``run`` (each point from its plan in process, or through Hydra's launcher), ``end`` (the table, REPORT.md
and the tracker, from the rows). Hydra calls it as its sweeper (``hydra_plugins.blockbench_sweeper``)."""
