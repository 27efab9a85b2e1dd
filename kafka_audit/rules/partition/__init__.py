"""The checks of one partition as a whole (``UnifiedLog``, ``LogSegment``, ``RemoteLogManager``):
offset continuity, index entries, missing segments, the tiered log. Pure: no I/O."""
