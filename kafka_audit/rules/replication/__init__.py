"""Replicas of one partition side by side (SPEC section 6): Kafka's leader-epoch cache, the
follower fetcher's truncation, and the comparison of batch summaries. Pure: no I/O."""
