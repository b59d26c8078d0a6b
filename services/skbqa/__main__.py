"""`python -m skbqa …` = the `skbqa` command (the local stack starts its services this way)."""

from skbqa.cli.main import run

run()
