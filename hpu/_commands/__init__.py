"""One module per ``hpu`` subcommand; see :mod:`hpu.cli`."""
