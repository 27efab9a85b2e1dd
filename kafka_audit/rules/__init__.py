"""Kafka's rules as pure functions over decoded data, no I/O: record validation (LogValidator),
producer-state replay (ProducerAppendInfo / ProducerStateManager), transactions, offsets, indexes."""
