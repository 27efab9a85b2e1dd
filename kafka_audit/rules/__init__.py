"""Kafka's rules as pure functions over decoded data, no I/O. The vocabulary every rule shares sits
here (the check catalogue, findings, events, batch summaries, remedies); each Kafka seam has its
subpackage: ``validation`` (LogValidator), ``replay`` (ProducerStateManager), ``rejection`` (broker
log lines), ``partition`` (offsets, indexes, the tiered log), ``replication`` (LeaderEpochFileCache)."""
