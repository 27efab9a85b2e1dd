"""Where the Spark job's rows land: replicas dealt out over the partition step's partitions by bytes
(:func:`place_replicas`), and int keys that Spark's hash partitioning sends to a chosen bucket
(:func:`keys_for_buckets`, Spark's Murmur3 ``hash()`` of an int in :func:`spark_hash_int`).
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Sequence

from kafka_audit.audit.segment_task import SegmentTask


def place_replicas(tasks: list[SegmentTask], count: int) -> dict[tuple, int]:
    """The partition-step partition of each replica: replicas dealt out by bytes, largest first,
    each to the least loaded of ``count`` partitions, so that the partition step is spread evenly
    over the cores (ties broken by key: the same input always gives the same placement).

    Hashing the replica key cannot promise that: a hash of ``<topic>-<N>`` folders may send many
    replicas to one partition and leave another idle."""
    sizes: dict[tuple, int] = {}
    for task in tasks:
        sizes[task.replica_key] = sizes.get(task.replica_key, 0) + task.byte_count
    loads = [(0, index) for index in range(max(1, count))]
    placement: dict[tuple, int] = {}
    for replica, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        load, index = heapq.heappop(loads)
        placement[replica] = index
        heapq.heappush(loads, (load + size, index))
    return placement


def keys_for_buckets(buckets: Sequence[int], count: int) -> list[int]:
    """Distinct int keys, one per entry of ``buckets``, that Spark's ``repartition(count, key)``
    sends to that bucket: hash partitioning puts a row in ``pmod(hash(key), count)``. Rows keyed
    so land exactly where the driver planned them, which a plain hash of the data cannot promise."""
    waiting: dict[int, deque[int]] = defaultdict(deque)
    for index, bucket in enumerate(buckets):
        waiting[bucket].append(index)
    keys = [0] * len(buckets)
    left, candidate = len(buckets), 0
    while left:
        queue = waiting.get(spark_hash_int(candidate) % count)
        if queue:
            keys[queue.popleft()] = candidate
            left -= 1
        candidate += 1
    return keys


_MASK = 0xFFFFFFFF


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an int column: Murmur3_x86_32.hashInt with seed 42, signed."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _MASK

    k = rotl((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h = (rotl(seed ^ k, 13) * 5 + 0xE6546B64) & _MASK
    h ^= 4
    h ^= h >> 16
    h = h * 0x85EBCA6B & _MASK
    h ^= h >> 13
    h = h * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h
