"""The broker's checks of one appended batch (``LogValidator``, ``LogValidator.validateRecord``):
magic, CRC, sizes, offsets, timestamps, compaction keys, control batches. Pure: no I/O."""
