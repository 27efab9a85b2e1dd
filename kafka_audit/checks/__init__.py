"""Record rules (LogValidator) and producer-state replay (ProducerStateManager): pure, per partition."""
