"""The ``kafka-audit`` command line: the Typer app and ``main`` (``app``), one module per command
group (``audit_commands``: scan, producers, timeline, report; ``dump_command``), the request of
the PATH commands (``command_request``), and the options, value parsers and exit codes they share
(``options``).

The top layer: may use every package, nothing imports it.
"""
