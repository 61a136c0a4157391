"""What a run is: the Hydra schema (``schema``), and the model a config describes, its baseline and every
cross-field rule of the measurement as one line (``checks``)."""
