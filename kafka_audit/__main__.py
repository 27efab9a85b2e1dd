"""``python -m kafka_audit``: the same CLI as ``kafka-audit``."""

from kafka_audit.cli.entry import main

main()
