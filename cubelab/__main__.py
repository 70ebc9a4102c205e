"""`python -m cubelab ...` — see `cubelab.cli`."""

import sys

from cubelab.cli import main

sys.exit(main())
