"""``python -m ablations +sweep=norm`` (or ``blockbench run +sweep=norm``): see README.md."""

import sys

from ablations.config.command_start import reexec_with_tuned_malloc

reexec_with_tuned_malloc("ablations")

from ablations.config.command_start import start  # noqa: E402

sys.argv[1:] = start("run", sys.argv[1:])  # plugins imported before the command's modules read the choices

from ablations.cli import main  # noqa: E402

sys.exit(main())
