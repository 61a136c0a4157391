"""``python -m ablations.sizes``: full-size models' parameters, FLOPs and KV bytes on the meta device

The command's name only; the code is ``ablations.report.sizes``.
"""

from ablations.report.sizes import main

if __name__ == "__main__":
    raise SystemExit(main())
