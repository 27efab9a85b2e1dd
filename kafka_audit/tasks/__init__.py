"""The audit's task layer: per-segment and per-partition drivers that read files and run the rules."""
