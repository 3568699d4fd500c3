"""Archived files and logs reach the client in chunks: the server never holds a whole file in memory."""

from __future__ import annotations

import hashlib
import tracemalloc

from jupyter_hetero.handlers.workloads import CHUNK_BYTES

# Far larger than a chunk, so a handler that read the whole file would show in the peak.
SIZE = 256 * CHUNK_BYTES  # 16 MiB


def _writer(name: str, where: str) -> str:
    """Job code writing SIZE bytes of a known pattern to ``name`` under the job's ``where`` directory."""
    return (f"import os\nblock = bytes(range(256)) * {CHUNK_BYTES // 256}\n"
            f"with open(os.path.join(os.environ['{where}'], '{name}'), 'wb') as out:\n"
            f"    for i in range({SIZE // CHUNK_BYTES}):\n"
            f"        out.write(block[i % 256:] + block[:i % 256])\n")


def _expected_digest() -> str:
    block = bytes(range(256)) * (CHUNK_BYTES // 256)
    digest = hashlib.sha256()
    for i in range(SIZE // CHUNK_BYTES):
        digest.update(block[i % 256:] + block[:i % 256])
    return digest.hexdigest()


async def _download(jp_fetch, *route: str, **params) -> tuple[str, int, int]:
    """(sha256, size, peak bytes allocated in this process meanwhile) of a streamed download."""
    digest, received = hashlib.sha256(), 0

    def take(chunk: bytes) -> None:
        nonlocal received
        digest.update(chunk)
        received += len(chunk)

    tracemalloc.start()
    try:
        response = await jp_fetch("hetero", "api", "v1", *route, params=params, streaming_callback=take,
                                  request_timeout=120)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.code == 200
    return digest.hexdigest(), received, peak


async def test_an_archived_file_larger_than_a_chunk_arrives_whole_without_being_read_at_once(api, jp_fetch, wait_for):
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing",
                                           "code": _writer("big.bin", "HETERO_OUTPUT_DIR")})
    await wait_for(job["id"], lambda w: w["state"] == "succeeded", timeout=60)
    digest, received, peak = await _download(jp_fetch, "workloads", str(job["id"]), "files", path="outputs/big.bin")
    assert (digest, received) == (_expected_digest(), SIZE)
    # Server and client share this process: a whole-file read (or a whole-body reply) would peak
    # above SIZE; chunked, the peak stays a few chunks' worth.
    assert peak < SIZE // 4, f"the download peaked at {peak} bytes for a {SIZE}-byte file"


async def test_a_log_larger_than_a_chunk_arrives_whole_and_its_tail_reads_only_the_end(api, jp_fetch, wait_for):
    lines = 200_000  # about 3.4 MB of log
    code = f"import sys\nfor i in range({lines}):\n    sys.stdout.write(f'line {{i:06d}} ' + 'x' * 5 + '\\n')\n"
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "code": code})
    await wait_for(job["id"], lambda w: w["state"] == "succeeded", timeout=60)
    text = await api.text(f"workloads/{job['id']}/logs")
    assert f"line {0:06d} xxxxx\n" in text and f"line {lines - 1:06d} xxxxx\n" in text
    assert text.count("xxxxx\n") == lines
    tail = await api.text(f"workloads/{job['id']}/logs", tail="3")
    assert tail.splitlines() == [f"line {i:06d} xxxxx" for i in range(lines - 3, lines)]
