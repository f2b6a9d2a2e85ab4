"""`python -m clearflow`: the same as the `clearflow` command."""

from clearflow.cli import run

run()
