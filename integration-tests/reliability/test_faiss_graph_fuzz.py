"""Fuzzing ragloom's faiss HNSW graph file (``faiss-graph-*.bin``,
``IndexOptions("hnsw", hnsw_engine="faiss")``), beyond test_damaged_index_files.py's
systematic damages: seeded random bit flips and truncations, links out of range or to
their own node, levels that disagree with the offsets, and the file truncated after
``load(mmap=True)``, before the first search.

Each case is an error naming the graph file, or a store that still answers correctly:
every match is a stored id with its exact score (the walk may find other candidates
than the clean graph's, never garbage). Every case runs twice: as damaged, and "forged",
with the manifest recording the damaged file's size and checksums as a crafted
directory would, so the graph's own structural checks are what must catch it. One
runner process builds the store; each case runs in a fork of it with an address-space
limit, so a segfault or a SIGBUS is that case's failure, with its signal.
"""

from __future__ import annotations

import pytest
from forked_cases import run_runner

pytestmark = pytest.mark.integration  # subprocesses

RUNNER = r"""
import json, os, shutil, struct, sys, tempfile, zlib
from pathlib import Path
import numpy as np
from forked_cases import outcome
from ragloom.core import Embedding
from ragloom.core.stores import InMemoryEmbeddingStore
from ragloom.core.stores.base import EmbeddingSearchRequest
from ragloom.core.stores.quantized import IndexOptions

SEED, ROWS, DIM, K = 20261128, 300, 8, 5
HEAD = struct.Struct("<8sII5Q2qQ")

root = Path(sys.argv[1])
rng = np.random.default_rng(SEED)
vectors = rng.standard_normal((ROWS, DIM)).astype(np.float32)
ids = [f"id{i}" for i in range(ROWS)]
store = InMemoryEmbeddingStore(index=IndexOptions("hnsw", exact_below=0, hnsw_engine="faiss"))
store.add_all(vectors, ids=ids)
store.remove_all(ids[:7])  # dead nodes: the live bitmap and the selector are exercised
queries = vectors[10:16] + 0.01
exact = InMemoryEmbeddingStore()
exact.add_all(vectors[7:], ids=ids[7:])

def top(store):
    out = []
    for q in queries:
        r = store.search(EmbeddingSearchRequest(Embedding(q.tolist()), max_results=K))
        out.append([(m.embedding_id, round(m.score, 5)) for m in r.matches])
    return out

store.search(EmbeddingSearchRequest(Embedding(queries[0].tolist()), max_results=K))
store.save(root / "clean")
truth = [{i: s for i, s in hits} for hits in
         [[(m.embedding_id, round(m.score, 5)) for m in exact.search(EmbeddingSearchRequest(
             Embedding(q.tolist()), max_results=ROWS)).matches] for q in queries]]
expected = top(InMemoryEmbeddingStore.load(root / "clean", mmap=True))
(name,) = [p.name for p in (root / "clean").iterdir() if p.name.startswith("faiss-graph")]
data = (root / "clean" / name).read_bytes()

def arrays(data):
    # (offset, dtype, count) of levels, offsets, links, live, codes (the module's layout)
    head = HEAD.unpack_from(data, 0)
    dims, nodes, slots = head[3], head[6], head[7]
    at, out = HEAD.size, []
    for dtype, count in (("<i4", nodes), ("<u8", nodes + 1), ("<i4", slots),
                         ("u1", -(-nodes // 8)), ("u1", nodes * dims * 2)):
        at += -at % 64
        out.append((at, dtype, count))
        at += count * np.dtype(dtype).itemsize
    return head, out

def edit(which, change):
    changed = bytearray(data)
    _, layout = arrays(data)
    at, dtype, count = layout[which]
    array = np.frombuffer(changed, dtype, count, at).copy()
    change(array)
    changed[at:at + array.nbytes] = array.tobytes()
    return bytes(changed)

def edit_head(field, value):
    fields = list(HEAD.unpack_from(data, 0))
    fields[field] = value
    return HEAD.pack(*fields) + data[HEAD.size:]

def cases():
    size = len(data)
    for n in range(240):  # 1-4 random bit flips anywhere
        changed = bytearray(data)
        for _ in range(int(rng.integers(1, 5))):
            at = int(rng.integers(0, size))
            changed[at] ^= 1 << int(rng.integers(0, 8))
        yield f"flips#{n}", bytes(changed)
    for n in range(40):  # flips in the head only
        changed = bytearray(data)
        at = int(rng.integers(0, HEAD.size))
        changed[at] ^= 1 << int(rng.integers(0, 8))
        yield f"headflip#{n}@{at}", bytes(changed)
    for n, cut in enumerate(sorted(rng.integers(0, size, 60))):
        yield f"cut#{n}@{cut}", data[:int(cut)]
    yield "grown", data + bytes(64)
    head, layout = arrays(data)
    nodes, slots, entry, top_level = head[6], head[7], head[8], head[9]
    levels = np.frombuffer(data, "<i4", nodes, layout[0][0])
    offsets = np.frombuffer(data, "<u8", nodes + 1, layout[1][0]).astype(np.int64)
    links = np.frombuffer(data, "<i4", slots, layout[2][0])
    used = np.flatnonzero(links >= 0)
    for n, slot in enumerate(rng.choice(used, 8, replace=False)):
        slot = int(slot)
        owner = int(np.searchsorted(offsets, slot, side="right") - 1)
        for value, label in ((nodes, "nodes"), (2**31 - 1, "max"), (-2, "-2"),
                             (-(2**31), "min"), (owner, "self")):
            yield f"link#{n}={label}", edit(2, lambda a, s=slot, v=value: a.__setitem__(s, v))
    upper = np.flatnonzero(levels > 1)
    low = int(np.flatnonzero(levels == 1)[0])
    base = int(offsets[upper[0]])  # a level-1 slot of an upper node: point it at a level-0 node
    width0 = 32  # faiss: 2 * M slots on level 0 (M = 16)
    yield "upper-link-to-low-node", edit(2, lambda a: a.__setitem__(base + width0, low))
    yield "all-links-self", edit(2, lambda a: a.__setitem__(
        slice(None), np.repeat(np.arange(nodes), np.diff(offsets)).astype(np.int32)))
    yield "all-links-empty", edit(2, lambda a: a.__setitem__(slice(None), -1))
    yield "level+1", edit(0, lambda a: a.__setitem__(low, 2))
    yield "level0", edit(0, lambda a: a.__setitem__(low, 0))
    yield "level-neg", edit(0, lambda a: a.__setitem__(low, -5))
    yield "level-huge", edit(0, lambda a: a.__setitem__(low, 2**31 - 1))
    yield "entry-level-down", edit(0, lambda a: a.__setitem__(entry, 1))
    yield "all-levels-1", edit(0, lambda a: a.__setitem__(slice(None), 1))
    yield "offsets-swapped", edit(1, lambda a: a.__setitem__(slice(5, 7), a[5:7][::-1].copy()))
    yield "offsets-last+1", edit(1, lambda a: a.__setitem__(-1, a[-1] + 1))
    yield "offsets-huge", edit(1, lambda a: a.__setitem__(3, 2**63))
    yield "offsets-zero", edit(1, lambda a: a.__setitem__(slice(None), 0))
    yield "live-all", edit(3, lambda a: a.__setitem__(slice(None), 255))
    yield "live-none", edit(3, lambda a: a.__setitem__(slice(None), 0))
    yield "head-nodes-huge", edit_head(6, 2**40)
    yield "head-slots-huge", edit_head(7, 2**62)
    yield "head-entry-last", edit_head(8, nodes - 1)
    yield "head-entry-low", edit_head(8, low)
    yield "head-top+1", edit_head(9, top_level + 1)
    yield "head-top-63", edit_head(9, 63)
    yield "head-dead-all", edit_head(10, nodes)
    yield "head-connectivity-2", edit_head(4, 2)

def consistent(got):
    return all(all(truth[q].get(i) == s for i, s in hits) for q, hits in enumerate(got))

def forge(work, damaged):
    # The manifest records the damaged file's own size and checksums, as a stranger's
    # crafted directory would: only the graph's structural checks stand in the way.
    manifest = json.loads((work / "manifest.json").read_text())
    entry = manifest["files"]["faiss-graph"]
    entry.update(size=len(damaged), crc32=f"{zlib.crc32(damaged):08x}",
                 head=f"{zlib.crc32(damaged[:4096]):08x}")
    (work / "manifest.json").write_text(json.dumps(manifest))

def attempt(label, damaged, after_load=None, forged=False):
    work = Path(tempfile.mkdtemp(dir=root))
    try:
        for path in (root / "clean").iterdir():
            shutil.copyfile(path, work / path.name)
        if damaged is not None:
            (work / name).write_bytes(damaged)
            if forged:
                forge(work, damaged)

        def case():
            loaded = InMemoryEmbeddingStore.load(work, mmap=True)
            if after_load is not None:
                after_load(work / name)
            got = top(loaded)
            result = "same" if got == expected else "wrong:" + json.dumps(got[0])
            if result != "same" and consistent(got):
                full = all(len(hits) == K for hits in got)
                result = "consistent" if full else "short"
            loaded.add_all(queries[:2], ids=["new0", "new1"])  # a write on the graph
            top(loaded)
            return result

        return outcome(case, name)
    finally:
        shutil.rmtree(work)

outcomes = []
for label, damaged in cases():
    outcomes.append([label, attempt(label, damaged)])
    outcomes.append(["forged:" + label, attempt(label, damaged, forged=True)])
for cut in (0, 80, len(data) // 2, len(data) - 1):  # shrunk under the mapping
    outcomes.append([f"truncated-after-load@{cut}",
                     attempt("", None, lambda path, c=cut: os.truncate(path, c))])
outcomes.append(["clean", attempt("clean", None)])
print(json.dumps(outcomes))
"""


def test_every_fuzzed_graph_file_is_a_named_error_or_answers_correctly(tmp_path: object) -> None:
    cases = run_runner(RUNNER, str(tmp_path), timeout=600)
    assert len(cases) > 800
    outcomes = dict(cases)
    assert outcomes["clean"] == "same"
    # A crafted graph without links (structurally valid) walks to its entry alone: fewer
    # matches than asked, each still a stored id with its exact score.
    short = {c[0] for c in cases if c[1] == "short"}
    assert short <= {"forged:all-links-self", "forged:all-links-empty"}, short
    good = ("error:names", "same", "consistent", "short")
    bad = [case for case in cases if case[1] not in good]
    assert not bad, bad
    # Structure is always checked: only flips inside the data may load.
    loaded = [
        c
        for c in cases
        if c[1] != "error:names" and not c[0].removeprefix("forged:").startswith("flips#")
    ]
    allowed = {"clean", "all-links-empty", "link#", "upper-link-to-low-node", "all-links-self"}
    allowed |= {f"headflip#{n}@{at}" for n in range(40) for at in range(32, 40)}  # build beam
    assert not [
        c for c in loaded if not any(c[0].removeprefix("forged:").startswith(a) for a in allowed)
    ], loaded
    for label in ("truncated-after-load", "head-nodes-huge", "offsets-huge", "level-huge"):
        assert all(o == "error:names" for n, o in cases if label in n), label
    forged = [c for c in cases if c[0].startswith("forged:")]
    assert sum(c[1] == "error:names" for c in forged) > 300  # the checks, not the checksum
    print({o: sum(c[1] == o for c in cases) for o in {c[1] for c in cases}})
