"""What a call must do (FLOPs, bytes) and how long a machine needs for it: the roofline and its calibration.

Below ``measure``, ``report`` and ``predict``, which all read it; of ``ablations`` it imports only ``paths``.
"""
