"""Damaged index files: every bit flip, truncation and size change of a saved store's
data files (vectors, rows, index codes, HNSW graph: usearch's file ``graph-*.usearch``
and ragloom's faiss graph layout ``faiss-graph-*.bin``) gives a clear error naming the
file, or (memory-mapped without ``verify``, for damage inside the data) a store that
works; never a crash, a huge allocation or a raw ``MemoryError``/``RuntimeError``.

One runner process builds the stores once; each damaged load runs in a fork of it with
an address-space limit, so a segfault or a runaway allocation is one failed case, not a
crash of pytest.
"""

from __future__ import annotations

from forked_cases import run_runner

RUNNER = r"""
import json, shutil, struct, sys, tempfile
from pathlib import Path
import numpy as np
from forked_cases import outcome
from ragloom.core import Embedding
from ragloom.core.stores import InMemoryEmbeddingStore
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.core.stores.quantized import IndexOptions

def build(root, kind):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((2000, 8)).astype(np.float32)
    engine = "faiss" if kind == "hnsw-faiss" else "usearch"
    options = IndexOptions(kind.split("-")[0], exact_below=0, hnsw_engine=engine)
    store = InMemoryEmbeddingStore(index=options)
    store.add_all(vectors, ids=[f"id{i}" for i in range(2000)])
    query = vectors[:3] + 0.01
    top(store, query)  # builds the index, which the save then keeps
    store.save(root / kind)
    return query

def top(store, queries):
    out = []
    for q in queries:
        r = store.search(EmbeddingSearchRequest(Embedding(q.tolist()), max_results=5))
        out.append([(m.embedding_id, round(m.score, 6)) for m in r.matches])
    return out

def positions(kind, data):
    # Byte positions to flip: the headers densely, the rest every Nth byte.
    size = len(data)
    if kind == "faiss-graph":  # the 80-byte head, then the arrays
        return [*range(0, 80), *range(80, size, max(1, (size - 80) // 160))]
    if kind == "graph":
        rows, cols = struct.unpack_from("<II", data, 0)
        head = 8 + rows * cols
        nodes = head + 64 + 40 + 2 * rows
        dense = [*range(0, 8), *range(head, head + 64, 2), *range(head + 64, nodes - 2 * rows)]
        spread = [*range(nodes - 2 * rows, nodes, max(1, 2 * rows // 8))]
        spread += range(nodes, size, max(1, (size - nodes) // 40))
        spread += range(8, head, max(1, head // 6))
        return dense + spread
    header = 128 if data[:6] == b"\x93NUMPY" else 0
    return [*range(0, header, 3), *range(header, size, max(1, (size - header) // 24))]

def damages(directory):
    manifest = json.loads((directory / "manifest.json").read_text())
    for kind, entry in manifest["files"].items():
        data = (directory / entry["name"]).read_bytes()
        for n, at in enumerate(positions(kind, data)):
            changed = bytearray(data)
            changed[at] ^= 1 << ((n * 3 + 7) % 8)
            yield kind, entry["name"], f"flip@{at}", bytes(changed)
        for cut in (0, 7, len(data) // 2, len(data) - 1):
            yield kind, entry["name"], f"cut@{cut}", data[:cut]
        yield kind, entry["name"], "grown", data + bytes(64)

def attempt(directory, name, damaged, queries, expected, verify):
    work = Path(tempfile.mkdtemp(dir=directory.parent))
    try:
        for path in directory.iterdir():
            shutil.copyfile(path, work / path.name)
        (work / name).write_bytes(damaged)

        def case():
            store = InMemoryEmbeddingStore.load(work, mmap=True, verify=verify)
            result = "same" if top(store, queries) == expected else "different"
            store.add_all(queries, ids=["new0", "new1", "new2"])  # reads a mapped graph
            top(store, queries)
            return result

        return outcome(case, name)
    finally:
        shutil.rmtree(work)

root = Path(sys.argv[1])
verify = sys.argv[2] == "verify"
outcomes = []
for index in ("hnsw", "hnsw-faiss", "int8"):
    queries = build(root, index)
    clean = InMemoryEmbeddingStore.load(root / index, mmap=True)
    expected = top(clean, queries)
    del clean
    for kind, name, damage, data in damages(root / index):
        said = attempt(root / index, name, data, queries, expected, verify)
        outcomes.append([index, kind, damage, said])
print(json.dumps(outcomes))
"""


def run_cases(tmp_path: object, mode: str) -> list[list[str]]:
    return run_runner(RUNNER, str(tmp_path), mode, timeout=300)


def test_every_damage_fails_clearly_or_loads_when_memory_mapped(tmp_path: object) -> None:
    cases = run_cases(tmp_path, "quick")
    assert len(cases) > 300
    bad = [case for case in cases if case[3] not in ("error:names", "same", "different")]
    assert not bad, bad
    # Only damage inside the data itself can go unnoticed without verify=True: the
    # headers, sizes and the graph's structure are always checked.
    unnoticed = [c for c in cases if not c[3].startswith("error") and not c[2].startswith("flip")]
    assert not unnoticed, unnoticed
    print({outcome: sum(c[3] == outcome for c in cases) for outcome in {c[3] for c in cases}})


def test_every_damage_fails_clearly_with_verify(tmp_path: object) -> None:
    cases = run_cases(tmp_path, "verify")
    bad = [case for case in cases if case[3] != "error:names"]
    assert not bad, bad
