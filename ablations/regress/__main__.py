"""``python -m ablations.regress`` (or ``blockbench regress``): see ``ablations.regress.cli``."""

import sys

from ablations.tuned_malloc import reexec_with_tuned_malloc

reexec_with_tuned_malloc("ablations.regress")

from ablations.regress.cli import main  # noqa: E402

sys.exit(main())
