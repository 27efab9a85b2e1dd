"""A broker's own log lines explained: each rejection it logged matched to the producer state the
log shows at that time (``ProducerStateManager`` at the rejection's offset). Pure: no I/O."""
