"""Convert classic SMART-format test collections (MED, CRAN, NPL) to the BEIR layout.

    .venv/bin/python scripts/bench/convert_collections.py [--mirror /work/.mirror] [--check]

Reads the raw files from git snapshots of the public GitHub repositories named in
``SOURCES`` (as ``fetch`` brings them under ``--mirror``: ``<owner>+<name>/repo``, read with
``git show <commit>:<path>``), checks each file's SHA-256, and writes
``scripts/bench/collections/<name>/`` as ``load_beir`` reads it, except that the corpus is
gzipped (``corpus.jsonl.gz``; ``quality_table.py`` and the integration test unpack it):

    corpus.jsonl.gz   {"_id", "title", "text"} per line
    queries.jsonl     {"_id", "text"} per line
    qrels/test.tsv    query-id <TAB> corpus-id <TAB> score (header line; score > 0 relevant)

The output is deterministic (gzip without a timestamp), so ``--check`` rebuilds in memory
and compares with the committed files. See ``collections/SOURCES.md`` for origins, terms
and the conversion choices (ids, grades, whitespace).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).parent / "collections"

# name -> (repository, commit, {role: (path, sha256)})
SOURCES: dict[str, tuple[str, str, dict[str, tuple[str, str]]]] = {
    "med": (
        "ryaanwells/Uni-Work",
        "bfe642e19c2e624640ba258d5f7fd3eb7692ab1e",
        {
            "docs": (
                "IR/Flair/testCollection/MED.ALL",
                "95eef4b1364f62b4931c6e9ebc6d917aab4793dd52a7e8ffadde7a4c62e8b512",
            ),
            "queries": (
                "IR/Flair/MED.QRY",
                "41fbc9d7a0ac8620d53e09b3429d2695cecc63d4bf7e15e55bbcee0785a1798c",
            ),
            "qrels": (
                "IR/Flair/MED.REL",
                "2887d977588f50cc0fdf5f30e0666db03e6cc99b64afa403c6533a33fd56ee3a",
            ),
        },
    ),
    "cran": (
        "stevinjs/CS7IS3-CA1",
        "43ab37069572a9e9719efe79ac8ae4d2c78c4588",
        {
            "docs": (
                "resources/cran.all.1400",
                "b234544b6ceccd131520df4a3cb6d42aee6576eb577933d047e722bbfe7b0b09",
            ),
            "queries": (
                "resources/cran.qry",
                "dd9b1419f678874daf66d5239ca372193722d74f5ea749f3b0f46a6b37cd9274",
            ),
            "qrels": (
                "resources/cranqrel",
                "92e54b58dac0b980152178f350d892fae66c8a239b8a11715b835fb8d2f6bc0e",
            ),
        },
    ),
    "npl": (
        "stefreschke/Information-Retrieval",
        "ec84884f012ae2c655004f1025753381bef27adb",
        {
            "docs": (
                "npl/doc-text",
                "a69b907bdbf59e43b8004e521eb3560dbbaa9cd5facfad4b30b0392434ba18e4",
            ),
            "queries": (
                "npl/query-text",
                "0f5e9a179334183cc3b04fe24d9bdfc3f656b08330e6798d8df5dc621bf8e6d5",
            ),
            "qrels": (
                "npl/rlv-ass",
                "1af78732abed49055218c1548c27cfa354c5d02a9b6c9cb854b9d0b74fcce24c",
            ),
        },
    ),
}

Record = dict[str, str]
# (documents, queries, qrels as (query id, document id, relevance)) of one collection.
Converted = tuple[list[Record], list[Record], list[tuple[str, str, int]]]


def _clean(text: str) -> str:
    """Lines joined by single spaces (the files are fixed-width, padded with blanks)."""
    return re.sub(r"\s+", " ", text).strip()


def _smart(raw: str) -> list[tuple[str, dict[str, str]]]:
    """``.I id`` records with ``.X`` fields (SMART format) -> [(id, {field: text})]."""
    records: list[tuple[str, dict[str, str]]] = []
    field = None
    for line in raw.splitlines():
        if m := re.match(r"^\.I\s+(\S+)", line):
            records.append((m[1], {}))
            field = None
        elif m := re.match(r"^\.([A-Z])\s*$", line):
            field = m[1]
            records[-1][1][field] = ""
        elif field is not None:
            records[-1][1][field] += line + "\n"
    return [(i, {k: _clean(v) for k, v in fields.items()}) for i, fields in records]


def _slashed(raw: str) -> list[tuple[str, str]]:
    """NPL's format: an id line, text lines, then a line holding ``/``."""
    out = []
    for block in re.split(r"^\s*/\s*$", raw, flags=re.M):
        lines = block.strip().splitlines()
        if lines:
            out.append((lines[0].strip(), _clean(" ".join(lines[1:]))))
    return out


def med(files: dict[str, str]) -> Converted:
    docs = [
        {"_id": m[1], "title": "", "text": _clean(m[2])}
        for m in re.finditer(r"<DOCNO>MED-(\d+)</DOCNO>\s*<body>(.*?)</body>", files["docs"], re.S)
    ]
    queries = [{"_id": i, "text": f["W"]} for i, f in _smart(files["queries"])]
    qrels = []
    for line in files["qrels"].splitlines():
        if line.strip():
            q, _, doc, grade = line.split()
            qrels.append((q, doc.removeprefix("MED-"), int(grade)))
    return docs, queries, qrels


def cran(files: dict[str, str]) -> Converted:
    docs = [
        {"_id": str(int(i)), "title": f.get("T", ""), "text": f.get("W", "")}
        for i, f in _smart(files["docs"])
    ]
    # cran.qry numbers its 225 queries 1, 2, 4, 8, 9, ... but cranqrel numbers them 1..225
    # in file order: the BEIR id is the position (as ir_datasets does).
    queries = [
        {"_id": str(n), "text": f["W"]} for n, (_, f) in enumerate(_smart(files["queries"]), 1)
    ]
    qrels = []
    for line in files["qrels"].splitlines():
        if line.strip():
            q, doc, code = line.split()
            # Cleverdon's codes (cranqrel.readme): 1 = a complete answer ... 4 = minimum
            # interest; -1 = no relevance. Grade = 5 - code, so higher is more relevant.
            grade = 5 - int(code) if int(code) > 0 else 0
            qrels.append((q, doc, grade))
    return docs, queries, qrels


def npl(files: dict[str, str]) -> Converted:
    docs = [{"_id": i, "title": "", "text": t} for i, t in _slashed(files["docs"])]
    queries = [{"_id": i, "text": t.lower()} for i, t in _slashed(files["queries"])]
    qrels: list[tuple[str, str, int]] = []
    for block in re.split(r"^\s*/\s*$", files["qrels"], flags=re.M):
        numbers = block.split()
        if numbers:
            qrels.extend((numbers[0], doc, 1) for doc in numbers[1:])
    return docs, queries, qrels


CONVERTERS: dict[str, Callable[[dict[str, str]], Converted]] = {
    "med": med,
    "cran": cran,
    "npl": npl,
}


def _read(mirror: Path, repo: str, commit: str, path: str, sha: str) -> str:
    git_dir = mirror / repo.replace("/", "+") / "repo"
    data = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout
    digest = hashlib.sha256(data).hexdigest()
    if sha and digest != sha:
        sys.exit(f"{repo}:{path}: sha256 {digest}, expected {sha}")
    return data.decode("latin-1")


def _jsonl(records: list[Record]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def build(name: str, mirror: Path) -> dict[str, bytes]:
    """The files of collection ``name`` (relative path -> bytes)."""
    repo, commit, paths = SOURCES[name]
    files = {role: _read(mirror, repo, commit, p, sha) for role, (p, sha) in paths.items()}
    docs, queries, qrels = CONVERTERS[name](files)
    ids = {d["_id"] for d in docs}
    qids = {q["_id"] for q in queries}
    assert len(ids) == len(docs), f"{name}: duplicate document ids"
    missing = [(q, d) for q, d, _ in qrels if q not in qids or d not in ids]
    assert not missing, f"{name}: judgements of unknown ids {missing[:5]}"
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as gz:
        gz.write(_jsonl(docs))
    tsv = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
    return {
        "corpus.jsonl.gz": buffer.getvalue(),
        "queries.jsonl": _jsonl(queries),
        "qrels/test.tsv": tsv.encode(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--check", action="store_true", help="compare with the committed files")
    parser.add_argument("--digests", action="store_true", help="print the raw files' sha256")
    args = parser.parse_args()
    if args.digests:
        for repo, commit, paths in SOURCES.values():
            for path, _ in paths.values():
                data = _read(args.mirror, repo, commit, path, "").encode("latin-1")
                print(repo, path, hashlib.sha256(data).hexdigest())
        return
    bad = 0
    for name in SOURCES:
        for relative, data in build(name, args.mirror).items():
            target = OUT / name / relative
            if args.check:
                same = target.exists() and target.read_bytes() == data
                bad += not same
                print(f"{name}/{relative}: {'same' if same else 'DIFFERS'}")
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                print(f"{name}/{relative}: {len(data)} bytes")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
