"""``python -m kafka_audit``: the same CLI as ``kafka-audit``."""

from kafka_audit.cli.app import main

main()
