"""``python -m ablations.regress`` (or ``blockbench regress``): see ``ablations.regress.cli``."""

import sys

from ablations.config.command_start import reexec_with_tuned_malloc

reexec_with_tuned_malloc("ablations.regress")

from ablations.config.command_start import start  # noqa: E402

sys.argv[1:] = start("regress", sys.argv[1:])  # plugins imported before the command's modules read the choices

from ablations.regress.cli import main  # noqa: E402

sys.exit(main())
