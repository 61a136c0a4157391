"""``python -m ablations.repeat``: do two runs of one sweep quote the same paired ratios?

The command's name only; the code is ``ablations.tools.repeat``.
"""

from ablations.tools.repeat import main

if __name__ == "__main__":
    raise SystemExit(main())
