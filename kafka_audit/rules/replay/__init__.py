"""The producer-state replay of one partition (``ProducerStateManager``, ``ProducerAppendInfo``,
``ProducerStateEntry``): sequences, fenced epochs, transactions, epoch bumps, snapshots, and what
each producer wrote. Pure: no I/O."""
