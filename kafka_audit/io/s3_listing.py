"""A large S3 prefix listed as several ``ListObjectsV2`` page chains side by side.

One recursive listing of a log dir of 10,000 partitions is 170 pages of 1,000 keys, each page
asked for only once the one before it has answered (its continuation token). S3 answers pages of
one prefix at up to 5,500 requests a second, so the time is the chain's round trips. When the
first page says there is more (``IsTruncated``), the prefix's immediate folders are listed with a
delimiter (the partition folders: a page per 1,000 of them) and the key space is cut at folder
names into up to :data:`CHAINS` ranges of equal folder counts; each range is one chain starting
after its first boundary (``StartAfter``) and stopping at the next, all chains at once on
threads. The keys are the ones a single chain gives: the ranges cover the whole key space but
the boundary names themselves, which are objects directly under the prefix, answered by the
delimiter listing. The requests are the single chain's pages plus the delimiter pages and one
page per extra chain.

Only a filesystem that can send ``ListObjectsV2`` itself (s3fs's ``call_s3``) is listed this way.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

# Chains at once, and the fewest partition folders worth a chain of their own.
CHAINS = 16
FOLDERS_PER_CHAIN = 64
_PAGE_KEYS = 1000


def can_list(fs: Any) -> bool:
    """Whether ``fs`` is s3fs (it sends ``ListObjectsV2`` with ``call_s3``)."""
    return hasattr(fs, "call_s3") and "s3" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))


def find(fs: Any, root_key: str) -> dict[str, dict]:
    """What ``fs.find(root_key, withdirs=True, detail=True)`` gives for a prefix of objects: each
    key under ``root_key`` (bucket first) to its info (``type``, ``size``); a key ending in ``/``
    (a folder marker) is a directory. Nothing under it: ``fs.find``'s own answer (``root_key``
    may be one object, a segment given as the PATH)."""
    bucket, _, key = root_key.partition("/")
    prefix = key.rstrip("/") + "/" if key else ""
    found: dict[str, dict] = {}
    token = _chain(fs, bucket, prefix, found, start_after=None, stop=None, first_page_only=True)
    if not found:
        return fs.find(root_key, withdirs=True, detail=True)
    if token is None:
        return found
    boundaries = _boundaries(fs, root_key, prefix, found)
    stops = [*boundaries, None]
    with ThreadPoolExecutor(max_workers=max(1, len(boundaries))) as pool:
        parts: list[dict[str, dict]] = [{} for _ in stops]
        runs = [pool.submit(_chain, fs, bucket, prefix, parts[0], None, stops[0], False, token)]
        runs += [
            pool.submit(_chain, fs, bucket, prefix, parts[i + 1], boundaries[i], stops[i + 1], False)
            for i in range(len(boundaries))
        ]
        for run in runs:
            run.result()  # a chain's error surfaces here
    for part in parts:
        found.update(part)
    return found


def _boundaries(fs: Any, root_key: str, prefix: str, found: dict[str, dict]) -> list[str]:
    """Keys (``prefix`` + folder name) where chains after the first start, from a delimiter
    listing of the prefix; the objects directly under it go into ``found``."""
    folders = []
    for info in fs.ls(root_key, detail=True, refresh=True):
        name = str(info["name"]).rstrip("/")
        if info.get("type") == "directory":
            folders.append(name.partition("/")[2])
        else:
            found[name] = {"name": name, "type": "file", "size": int(info.get("size") or 0)}
    folders.sort()
    chains = min(CHAINS, len(folders) // FOLDERS_PER_CHAIN)
    return [folders[len(folders) * i // chains] for i in range(1, chains)] if chains > 1 else []


def _chain(
    fs: Any,
    bucket: str,
    prefix: str,
    found: dict[str, dict],
    start_after: str | None,
    stop: str | None,
    first_page_only: bool,
    token: str | None = None,
) -> str | None:
    """List pages of keys after ``start_after`` (or from ``token``) below ``stop`` into ``found``;
    the continuation token where a first-page-only call stopped (None: the listing ended)."""
    ask: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": _PAGE_KEYS}
    if token is not None:
        ask["ContinuationToken"] = token
    elif start_after is not None:
        ask["StartAfter"] = start_after
    while True:
        page = fs.call_s3("list_objects_v2", **ask)
        for entry in page.get("Contents", ()):
            key = entry["Key"]
            if stop is not None and key >= stop:
                return None
            name = f"{bucket}/{key}".rstrip("/")
            folder = key.endswith("/")
            found[name] = {"name": name, "type": "directory" if folder else "file", "size": 0 if folder else int(entry["Size"])}
        if not page.get("IsTruncated"):
            return None
        ask.pop("StartAfter", None)
        ask["ContinuationToken"] = page["NextContinuationToken"]
        if first_page_only:
            return ask["ContinuationToken"]
