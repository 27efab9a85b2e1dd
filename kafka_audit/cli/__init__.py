"""The ``kafka-audit`` command line: Typer commands (``app``) and their shared options,
value parsers and exit codes (``options``).

The top layer: may use every package, nothing imports it.
"""
