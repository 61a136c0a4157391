"""``python -m ablations.compare``: direction-aware regression checks between two results tables

The command's name only; the code is ``ablations.tools.compare``.
"""

from ablations.tools.compare import main

if __name__ == "__main__":
    raise SystemExit(main())
