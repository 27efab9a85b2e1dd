"""Tiered storage (SPEC section 5): the Aiven plugin's objects, ``__remote_log_metadata``, and one
history per partition across remote and local segments.

Oracles: the plugin's own test vectors (ChunkIndexSerializationTest, SegmentManifestV1SerdeTest),
the real-broker corpora (reconstruction byte-identical to the segments; a partition split between
remote and local storage audited as when kept whole and local), and a moto S3 server.
"""

from __future__ import annotations

import base64
import os
import shutil
import struct
from pathlib import Path

import pytest

import kafka_audit
from kafka_audit.io import rsm_objects
from kafka_audit.io.rsm_manifest import Chunk, decode_chunk_sizes, parse_chunk_index, parse_manifest
from kafka_audit.io.storage import StorageSettings
from kafka_audit.io.storage_context import StorageContext
from kafka_audit.log.remote_log_metadata import decode_remote_log_metadata
from tests.support.audit_run import BUNDLED
from tests.support.rsm_writer import (
    encode_chunk_sizes,
    object_stem,
    segment_id_for,
    segment_metadata_record,
    segment_update_record,
    write_segment,
    zstd_frame,
)
from tests.support.tiering import TOPIC_ID, segment_indexes, tier
from tests.support.writer import BatchSpec, RecordSpec, encode_batch

# ChunkIndexSerializationTest.ENCODED_CHUNKS: the sizes 10, 20, 30.
PLUGIN_ENCODED_CHUNKS = "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"
# SegmentManifestV1SerdeTest.WITHOUT_ENCRYPTION_WITHOUT_TXN_INDEX_JSON (its segment metadata cut short).
PLUGIN_MANIFEST = (
    '{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,'
    '"transformedChunkSize":110,"finalTransformedChunkSize":110},"segmentIndexes":{'
    '"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},"producerSnapshot":{"position":2,"size":1},'
    '"leaderEpoch":{"position":3,"size":1},"transaction":null},"compression":false,'
    '"remoteLogSegmentMetadata":{"startOffset":0,"endOffset":1000}}'
)
CORPUS = BUNDLED
CORPORA = [CORPUS / "real-broker", CORPUS / "real-broker-4"]
REAL_SEGMENTS = sorted(p for c in CORPORA for p in c.glob("*/data/*/*.log"))
assert REAL_SEGMENTS, f"bundled corpora {CORPORA} are missing"


@pytest.fixture(scope="module")
def rsa_key(tmp_path_factory):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path_factory.mktemp("key") / "rsm.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return key, path


def test_chunk_sizes_match_the_plugins_vector():
    assert base64.b64encode(zstd_frame(encode_chunk_sizes([10, 20, 30]))).decode() == PLUGIN_ENCODED_CHUNKS
    import zstandard

    assert decode_chunk_sizes(zstandard.ZstdDecompressor().decompress(base64.b64decode(PLUGIN_ENCODED_CHUNKS))) == [10, 20, 30]
    for values in ([], [213], [0, 1000, 2, 44002, 369], [1, 0xFFFFFF + 10, 0xFFFFFF + 20, 2**31 - 1]):
        assert decode_chunk_sizes(encode_chunk_sizes(values)) == values


def test_chunk_indexes_as_the_plugin_materialises_them():
    fixed = parse_chunk_index({"type": "fixed", "originalChunkSize": 100, "originalFileSize": 250,
                               "transformedChunkSize": 110, "finalTransformedChunkSize": 30})
    assert fixed.chunks == [Chunk(0, 0, 100, 0, 110), Chunk(1, 100, 100, 110, 110), Chunk(2, 200, 50, 220, 30)]
    variable = parse_chunk_index({"type": "variable", "originalChunkSize": 100, "originalFileSize": 250,
                                  "transformedChunks": PLUGIN_ENCODED_CHUNKS})
    assert variable.chunks == [Chunk(0, 0, 100, 0, 10), Chunk(1, 100, 100, 10, 20), Chunk(2, 200, 50, 30, 30)]
    assert [c.id for c in variable.chunks_for_range(150, 201)] == [1, 2]


def test_the_plugins_sample_manifest():
    manifest = parse_manifest(PLUGIN_MANIFEST.encode())
    assert manifest.original_size == 1000 and len(manifest.chunk_index.chunks) == 10
    assert manifest.indexes["leaderEpoch"] == (3, 1) and manifest.indexes["transaction"] is None
    assert manifest.encryption is None and manifest.compression is False


@pytest.mark.parametrize("variant", ["fixed", "compressed", "encrypted", "encrypted-compressed"])
def test_reconstruction_is_byte_identical_to_the_real_segments(tmp_path, rsa_key, variant):
    key, key_path = rsa_key
    keyed = StorageContext(StorageSettings(rsm_key=rsm_objects.RsmKey(key_path.read_bytes())))
    public = key.public_key() if "encrypted" in variant else None
    for number, log in enumerate(REAL_SEGMENTS):
        original = log.read_bytes()
        stem = str(tmp_path / object_stem("", "t", TOPIC_ID, 0, number, segment_id_for(number)))
        indexes = segment_indexes(log)
        written = write_segment(stem, original, indexes, chunk_size=4096, compression="compressed" in variant, public_key=public)
        for path, data in written.objects.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(data)
        segment = rsm_objects.SegmentObject(stem + ".log", keyed)
        assert segment.size == len(original)
        assert segment.read(0, len(original)) == original, log
        assert segment.read(4000, 9000) == original[4000:9000]
        assert rsm_objects.read_index(rsm_objects.index_ref(stem, "offset"), keyed) == indexes["offset"]
        assert rsm_objects.read_index(rsm_objects.index_ref(stem, "timestamp"), keyed) == indexes["timestamp"]


def _comparable(findings) -> list[tuple]:
    """Findings without the paths (remote objects and local files are named apart)."""
    return sorted((f["check"], f["topic"], f["partition"], f["offset"], f["record_index"], f["producer_id"],
                   f["producer_epoch"], f["sequence"], f["severity"]) for f in findings)


SPLITS = [
    ("real-broker/retention-producer-expiry", "ret-0", 3, 0),
    ("real-broker/retention-producer-expiry", "ret-0", 4, 1),  # the last remote segment still local too
    ("real-broker/hanging-txn-timeout-aborted", "hang-0", 1, 0),
    ("real-broker/idempotent-compressed", "idem-none-0", 8, 2),
    ("real-broker/compacted", "cmp-0", 2, 0),
]


def _split(tmp_path: Path, case: str, partition: str, count: int, keep: int, **upload) -> tuple[Path, Path, Path]:
    source = CORPUS / case / "data"
    tier(source, partition, count, tmp_path / "local", tmp_path / "remote", keep_local=keep, **upload)
    os.system(f"chmod -R u+w {tmp_path / 'local'}")
    return source, tmp_path / "local", tmp_path / "remote"


@pytest.mark.parametrize("case,partition,count,keep", SPLITS)
def test_a_partition_split_between_remote_and_local_audits_as_when_whole(tmp_path, case, partition, count, keep):
    source, local, remote = _split(tmp_path, case, partition, count, keep, chunk_size=1000, compression=True)
    whole = kafka_audit.scan([str(source)], engine="local")
    split = kafka_audit.scan([str(local), str(remote)], engine="local")
    assert _comparable(split.findings) == _comparable(whole.findings)
    assert split.summary["partitions"] == whole.summary["partitions"]
    assert split.summary["bytes"] >= whole.summary["bytes"]


def test_encrypted_segments_need_the_key(tmp_path, rsa_key):
    key, key_path = rsa_key
    source, local, remote = _split(tmp_path, "real-broker/retention-producer-expiry", "ret-0", 3, 0,
                                   chunk_size=2048, compression=False, public_key=key.public_key())
    without = kafka_audit.scan([str(local), str(remote)], engine="local")
    unreadable = [f for f in without.findings if f["check"] == "unreadable_segment"]
    assert len(unreadable) == 3 and {f["details"]["reason"] for f in unreadable} == {"encrypted"}
    assert not [f for f in without.findings if f["check"] == "index_mismatch"]  # no consequence of the unread bytes
    assert all("--rsm-key-file" in f["message"] for f in unreadable)
    with_key = kafka_audit.scan([str(local), str(remote)], engine="local", rsm_key_file=key_path)
    whole = kafka_audit.scan([str(source)], engine="local")
    assert _comparable(with_key.findings) == _comparable(whole.findings)


def test_a_wrong_key_is_a_finding_and_the_key_never_prints(tmp_path, rsa_key):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key, _ = rsa_key
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = other.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    wrong = tmp_path / "wrong.pem"
    wrong.write_bytes(pem)
    _, local, remote = _split(tmp_path, "real-broker/retention-producer-expiry", "ret-0", 1, 0,
                              chunk_size=2048, compression=True, public_key=key.public_key())
    from typer.testing import CliRunner

    from kafka_audit.cli.app import app

    result = CliRunner().invoke(app, ["scan", str(local), str(remote), "--engine", "local", "--format", "json",
                                      "--rsm-key-file", str(wrong), "--quiet"])
    assert result.exit_code == 1
    assert "does not unwrap" in result.output
    body = b"".join(pem.splitlines()[1:-1]).decode()
    assert body[:40] not in result.output and "PRIVATE KEY" not in result.output
    missing = CliRunner().invoke(app, ["scan", str(local), "--engine", "local", "--rsm-key-file", str(tmp_path / "none.pem")])
    assert missing.exit_code == 2


def _metadata_log(folder: Path, values: list[bytes]) -> None:
    folder.mkdir(parents=True)
    batch = encode_batch(BatchSpec(records=tuple(RecordSpec(value=v) for v in values), base_offset=0))
    (folder / "00000000000000000000.log").write_bytes(batch)


def test_remote_log_metadata_checks_and_the_history(tmp_path):
    source, local, remote = _split(tmp_path, "real-broker/retention-producer-expiry", "ret-0", 3, 0,
                                   chunk_size=1000, compression=False)
    logs = sorted((remote).rglob("*.log"))
    starts = [int(p.name[:20]) for p in logs]
    ids = [p.name[21:43] for p in logs]
    sizes = [rsm_objects.load_manifest(str(p)[:-4], StorageContext()).original_size for p in logs]
    first_local = min(int(p.name[:20]) for p in (local / "ret-0").glob("*.log"))
    ends = starts[1:] + [first_local]
    values = []
    for i, (seg, start, end, size) in enumerate(zip(ids, starts, ends, sizes)):
        values.append(segment_metadata_record("ret", TOPIC_ID, 0, seg, start, end - 1, size + (7 if i == 1 else 0),
                                              txn_index_empty=False))
        values.append(segment_update_record("ret", TOPIC_ID, 0, seg, "COPY_SEGMENT_FINISHED"))
    ghost = segment_id_for(99)
    values.append(segment_metadata_record("ret", TOPIC_ID, 0, ghost, 0, starts[0] - 1, 10))
    values.append(segment_metadata_record("ret", TOPIC_ID, 0, segment_id_for(98), 0, 5, 10, "COPY_SEGMENT_FINISHED"))
    values.append(segment_metadata_record("ret", TOPIC_ID, 0, segment_id_for(97), starts[0], starts[0] + 9, 10,
                                          "COPY_SEGMENT_FINISHED"))
    _metadata_log(local / "__remote_log_metadata-0", values)
    decoded = decode_remote_log_metadata(None, values[0])
    assert decoded["record"] == "RemoteLogSegmentMetadataRecord" and decoded["start_offset"] == starts[0]
    assert decoded["txn_index_empty"] is False and "error" not in decoded
    result = kafka_audit.scan([str(local), str(remote)], engine="local")
    by_check: dict[str, list] = {}
    for f in result.findings:
        by_check.setdefault(f["check"], []).append(f)
    assert [f["details"]["segment_id"] for f in by_check["remote_segment_incomplete"]] == [ghost]
    missing = {(f["details"]["segment_id"], f["details"]["size_found"]) for f in by_check["remote_segment_missing"]}
    assert missing == {(ids[1], sizes[1]), (segment_id_for(98), None), (segment_id_for(97), None)}
    assert len(by_check["remote_txn_index_flag"]) == 3  # TxnIndexEmpty false, no transaction index copied
    [overlap] = by_check["remote_segment_overlap"]
    assert overlap["severity"] == "error" and {overlap["details"]["segment_id"], overlap["details"]["other_segment_id"]} == {
        ids[0], segment_id_for(97)}
    [gap] = by_check["remote_log_gap"]
    assert gap["details"]["missing_offsets"] == [6, starts[0] - 1] and gap["severity"] == "warning"
    # Deleting the first remote segment in the metadata takes it out of the history.
    values.append(segment_update_record("ret", TOPIC_ID, 0, ids[0], "DELETE_SEGMENT_STARTED"))
    shutil.rmtree(local / "__remote_log_metadata-0")
    _metadata_log(local / "__remote_log_metadata-0", values)
    deleted = kafka_audit.scan([str(local), str(remote)], engine="local")
    assert any(f["check"] == "remote_segment_incomplete" and f["details"]["segment_id"] == ids[0] for f in deleted.findings)
    assert any(ids[0] in note and "not part of the history" in note for note in deleted.notes)
    # Its batches no longer count as present: the producers first seen there now start after a gap.
    assert _comparable(deleted.findings) != _comparable(result.findings)


def test_dump_decodes_remote_log_metadata(tmp_path):
    folder = tmp_path / "__remote_log_metadata-3"
    _metadata_log(folder, [segment_metadata_record("t", TOPIC_ID, 0, segment_id_for(1), 0, 99, 4096, txn_index_empty=True),
                           segment_update_record("t", TOPIC_ID, 0, segment_id_for(1), "COPY_SEGMENT_FINISHED")])
    from typer.testing import CliRunner

    from kafka_audit.cli.app import app

    result = CliRunner().invoke(app, ["dump", str(folder / "00000000000000000000.log"), "--records", "--format", "json"])
    assert result.exit_code == 0
    assert "RemoteLogSegmentMetadataRecord" in result.output and "COPY_SEGMENT_FINISHED" in result.output


@pytest.mark.spark
def test_tiered_partition_on_s3_local_and_spark_engines(tmp_path, spark, rsa_key):
    """Encrypted and compressed objects on S3: the key travels with the tasks to the executors."""
    from tests.support.s3_server import S3Server, upload_tree

    key, key_path = rsa_key
    source, local, remote = _split(tmp_path, "real-broker/retention-producer-expiry", "ret-0", 3, 0,
                                   chunk_size=1500, compression=True, public_key=key.public_key())
    server = S3Server(tmp_path / "moto.log").start()
    try:
        fs = server.filesystem()
        fs.mkdir("tiered")
        upload_tree(fs, remote, "tiered/rsm")
        options = server.storage_options()
        whole = kafka_audit.scan([str(source)], engine="local")
        paths = [str(local), "s3://tiered/rsm"]
        on_local = kafka_audit.scan(paths, engine="local", storage_options=options, rsm_key_file=key_path)
        on_spark = kafka_audit.scan(paths, spark, storage_options=options, rsm_key_file=key_path)
        assert _comparable(on_local.findings) == _comparable(whole.findings)
        assert _comparable(on_spark.findings) == _comparable(whole.findings)
        on_spark.unpersist()
    finally:
        server.stop()


def test_broken_objects_are_findings_never_a_crash(tmp_path):
    _, local, remote = _split(tmp_path, "real-broker/retention-producer-expiry", "ret-0", 4, 0, chunk_size=1000, compression=True)
    logs = sorted(remote.rglob("*.log"))
    logs[0].with_suffix(".rsm-manifest").unlink()  # a .log without its manifest
    logs[1].unlink()  # a manifest without its .log
    damaged = bytearray(logs[2].read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF  # a chunk that no longer decompresses
    logs[2].write_bytes(bytes(damaged))
    logs[3].with_suffix(".rsm-manifest").write_text("{not json")
    result = kafka_audit.scan([str(local), str(remote)], engine="local")
    unreadable = {f["segment"].rsplit("/", 1)[-1][:20]: f["message"] for f in result.findings if f["check"] == "unreadable_segment"}
    assert set(unreadable) == {p.name[:20] for p in logs}
    assert "manifest" in unreadable[logs[0].name[:20]] and "missing" in unreadable[logs[0].name[:20]]
    assert ".log object is missing" in unreadable[logs[1].name[:20]]
    assert "does not decompress" in unreadable[logs[2].name[:20]] or "holds" in unreadable[logs[2].name[:20]]
    assert "not JSON" in unreadable[logs[3].name[:20]]


def test_dump_reads_an_encrypted_remote_segment_with_the_key(tmp_path, rsa_key):
    from typer.testing import CliRunner

    from kafka_audit.cli.app import app

    key, key_path = rsa_key
    source = CORPUS / "real-broker/transactions/data/txn-0/00000000000000000000.log"
    stem = tmp_path / object_stem("", "txn", TOPIC_ID, 0, 0, segment_id_for(0))
    for path, data in write_segment(str(stem), source.read_bytes(), segment_indexes(source), 4096, True, key.public_key()).objects.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    plain = CliRunner().invoke(app, ["dump", str(source), "--format", "json"])
    remote = CliRunner().invoke(app, ["dump", f"{stem}.log", "--format", "json", "--rsm-key-file", str(key_path)])
    assert remote.exit_code == 0 and plain.exit_code == 0
    def strip(text):
        return [line.split('"position"', 1)[1] for line in text.splitlines() if '"position"' in line]
    assert strip(remote.output) == strip(plain.output) and strip(plain.output)


def test_local_tiered_storage_layout_joins_the_local_log_too(tmp_path):
    """Kafka's LocalTieredStorage layout (``<topic>-<partition>-<topic id>/<offset>-<segment id>.log``)
    is one history with the local folder, as the plugin's is."""
    source = CORPUS / "real-broker/retention-producer-expiry/data"
    local = tmp_path / "local"
    shutil.copytree(source, local)
    os.system(f"chmod -R u+w {local}")
    folder = tmp_path / "remote" / f"ret-0-{TOPIC_ID}"
    folder.mkdir(parents=True)
    for log in sorted((local / "ret-0").glob("*.log"))[:5]:
        for sidecar in sorted(local.joinpath("ret-0").glob(log.stem + ".*")):
            if sidecar.suffix != ".snapshot":
                shutil.move(sidecar, folder / f"{int(log.stem)}-{segment_id_for(int(log.stem))}{sidecar.suffix}")
    found = kafka_audit.scan([str(local), str(tmp_path / "remote")], engine="local")
    whole = kafka_audit.scan([str(source)], engine="local")
    assert _comparable(found.findings) == _comparable(whole.findings)
    assert found.summary["partitions"] == whole.summary["partitions"]


def test_remote_log_metadata_reads_only_the_versions_and_tags_kafkas_schemas_define():
    """storage/src/main/resources/message/*Record.json: every record type at version 0 only, and one
    tagged field, TxnIndexEmpty (tag 0) of RemoteLogSegmentMetadataRecord; a version 1 is unknown
    (counted in internal_records_unknown), another tag is kept as ``tag_<n>``, never named."""
    from kafka_audit.log.internal_topics import unread_test_for_topic

    unknown_remote_log_metadata_record = unread_test_for_topic("__remote_log_metadata")
    assert unknown_remote_log_metadata_record is not None

    v1 = segment_metadata_record("t", TOPIC_ID, 0, segment_id_for(1), 0, 9, 100, version=1)
    assert decode_remote_log_metadata(None, v1)["error"] == "unknown record type 0 version 1"
    assert unknown_remote_log_metadata_record(None, v1)
    v0 = segment_metadata_record("t", TOPIC_ID, 0, segment_id_for(1), 0, 9, 100, txn_index_empty=True)
    assert not unknown_remote_log_metadata_record(None, v0)
    tagged = v0[:-4] + bytes([2, 0, 1, 1, 1, 4]) + struct.pack(">i", 7)  # tags 0 (true) and 1 (an int32)
    decoded = decode_remote_log_metadata(None, tagged)
    assert "error" not in decoded and decoded["txn_index_empty"] is True and decoded["tag_1"] == "00000007"
    assert "broker_leader_epoch" not in decoded
    update = segment_update_record("t", TOPIC_ID, 0, segment_id_for(1), "COPY_SEGMENT_FINISHED")
    with_tag = update[:-1] + bytes([1, 1, 8]) + struct.pack(">q", 42)  # a tag 1 the schema does not define
    decoded = decode_remote_log_metadata(None, with_tag)
    assert "error" not in decoded and "end_offset" not in decoded and decoded["tag_1"] == "000000000000002a"
