"""``python -m relay.cli``: the ``relay`` command line."""

from relay.cli import main

main()
