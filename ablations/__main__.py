"""``python -m ablations +sweep=norm`` (or ``blockbench run +sweep=norm``): see README.md."""

import sys

from ablations.tuned_malloc import reexec_with_tuned_malloc

reexec_with_tuned_malloc("ablations")

from ablations.cli import main  # noqa: E402

sys.exit(main())
