"""What a run is: the Hydra schema (``schema``), the model a config describes and its baseline
(``read_arch``), and every cross-field rule of the measurement as one line (``checks``)."""
