"""`python -m skbqa …` = the `skbqa` command (the local stack starts its services this way)."""

import sys

from skbqa.cli.main import main

sys.exit(main())
