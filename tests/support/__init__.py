"""Test helpers kept out of the product: the fault-injecting fixture writer and producer simulators."""
