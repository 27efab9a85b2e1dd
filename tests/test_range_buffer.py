"""record.range_buffer.RangeBuffer's reads: bounded whatever positions the walk asks for."""

from __future__ import annotations

from kafka_audit.record.range_buffer import RangeBuffer

_CHUNK = 64 * 1024


class _PatternRanges:
    """An object of ``size`` bytes (byte ``i`` is ``i % 251``), each ranged read recorded; a read
    of more than two chunks fails."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.reads: list[tuple[int, int]] = []

    def read(self, start: int, stop: int) -> bytes:
        self.reads.append((start, stop))
        assert stop - start <= 2 * _CHUNK, f"a read of {stop - start} bytes"
        return _pattern(start, stop)


def _pattern(start: int, stop: int) -> bytes:
    return bytes(i % 251 for i in range(start, stop))


def test_a_hop_far_ahead_reads_where_it_lands_not_the_bytes_between():
    ranges = _PatternRanges(1 << 31)  # a length field claiming 2 GiB: split_points hops over it
    buffer = RangeBuffer(ranges, chunk=_CHUNK, read_ahead=0)
    buffer.walk(0, None)
    buffer.need(0, 12)
    far = (1 << 30) + 5
    buffer.need(far, far + 12)
    assert bytes(buffer.buffer[far : far + 12]) == _pattern(far, far + 12)
    buffer.need(100, 112)  # far behind again
    assert bytes(buffer.buffer[100:112]) == _pattern(100, 112)
    buffer.close()
    assert sum(stop - start for start, stop in ranges.reads) <= 3 * _CHUNK


def test_a_hop_within_a_chunk_reads_on_from_the_bytes_read():
    ranges = _PatternRanges(16 * _CHUNK)
    buffer = RangeBuffer(ranges, chunk=_CHUNK, read_ahead=2)
    buffer.walk(0, None)
    buffer.need(0, 12)
    buffer.need(3 * _CHUNK + 7, 3 * _CHUNK + 19)  # past the reads ahead, by less than a chunk
    assert bytes(buffer.buffer[3 * _CHUNK + 7 : 3 * _CHUNK + 19]) == _pattern(3 * _CHUNK + 7, 3 * _CHUNK + 19)
    buffer.close()
    reads = sorted(ranges.reads)
    assert reads[0][0] == 0 and all(a[1] == b[0] for a, b in zip(reads, reads[1:]))  # each byte read once
