"""`python -m pipeline.cli`: the `wenheng` command."""

import sys

from pipeline.cli import main

sys.exit(main())
