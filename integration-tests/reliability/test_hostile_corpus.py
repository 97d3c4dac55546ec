"""The hostile corpus (``hostile_corpus.py``) through every parser and the file loader.

Each parser runs its cases in one child process, which reports for every case its
outcome, wall time and the process's peak memory so far (``VmHWM``): a case must parse
or fail with a ``RagloomError`` naming the file, within ``CASE_SECONDS``, and the child's
peak stays under ``PEAK_MIB``. Then the whole corpus goes through
``FileSystemDocumentLoader`` as one directory: the good files are kept, each other
failure is reported alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_corpus import PARSERS, SECRET, cases, good_html, good_office, good_pdf, good_text

CASE_SECONDS = 30.0  # a generous bound per case (the slowest takes a few seconds)
PEAK_MIB = 1536  # peak resident memory of one parser's child process

CHILD = """
import json, os, sys, time
from ragloom.core import RagloomError
def peak_kib():  # this process's own peak: ru_maxrss keeps the forking parent's across exec
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
parser_name, folder = sys.argv[1], sys.argv[2]
if parser_name == "text":
    from ragloom.core.parsers.text import TextDocumentParser as Parser
elif parser_name == "html":
    from ragloom.transformers.html import HtmlDocumentParser as Parser
elif parser_name == "pdf":
    from ragloom.parsers.pdf import PdfDocumentParser as Parser
elif parser_name == "office":
    from ragloom.parsers.office import OfficeDocumentParser as Parser
else:
    from ragloom.parsers.auto import AutoDocumentParser
    Parser = lambda: AutoDocumentParser(timeout=4)
parser = Parser()
for name in sorted(os.listdir(folder)):
    data = open(os.path.join(folder, name), "rb").read()
    started = time.perf_counter()
    report = {"name": name}
    try:
        report["text"] = parser.parse(data, source=name).text[:2000]
        report["outcome"] = "ok"
    except RagloomError as error:
        report["outcome"] = type(error).__name__
        report["names_input"] = name in str(error)
    except BaseException as error:  # what the test refuses: a raw exception
        report["outcome"] = "RAW " + type(error).__name__ + ": " + str(error)[:200]
    report["seconds"] = time.perf_counter() - started
    report["peak_mib"] = peak_kib() / 1024
    print(json.dumps(report), flush=True)
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus on disk: one folder per parser, plus the secret an entity tries to read."""
    root = tmp_path_factory.mktemp("hostile")
    secret = root / "secret.txt"
    secret.write_text(SECRET)
    for parser, name, data in cases(str(secret)):
        folder = root / parser
        folder.mkdir(exist_ok=True)
        assert not (folder / name).exists(), f"duplicate case {parser}/{name}"
        (folder / name).write_bytes(data)
    return root


def test_the_corpus_has_enough_distinct_cases(corpus: Path) -> None:
    counts = {parser: len(list((corpus / parser).iterdir())) for parser in PARSERS}
    assert sum(counts.values()) >= 200, counts
    assert min(counts.values()) >= 20, counts


@pytest.mark.parametrize("parser", PARSERS)
def test_every_case_parses_or_fails_cleanly_in_bounded_time_and_memory(
    corpus: Path, parser: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, parser, str(corpus / parser)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0, (reports[-1:], result.stderr[-3000:])
    assert len(reports) == len(list((corpus / parser).iterdir()))
    good = {**good_text(), **good_html(), **good_pdf(), **good_office()}
    problems = []
    for report in reports:
        name, outcome = report["name"], report["outcome"]
        if outcome.startswith("RAW"):
            problems.append(f"{name}: {outcome}")
        elif outcome != "ok" and not report["names_input"]:
            problems.append(f"{name}: {outcome} does not name the file")
        elif name in good and outcome != "ok":
            problems.append(f"{name}: a good file failed with {outcome}")
        if SECRET in report.get("text", ""):
            problems.append(f"{name}: an external entity was resolved")
        if report["seconds"] > CASE_SECONDS:
            problems.append(f"{name}: took {report['seconds']:.1f} s")
    assert not problems, problems
    assert max(report["peak_mib"] for report in reports) < PEAK_MIB


def test_the_loader_keeps_the_good_files_of_a_hostile_folder(corpus: Path, tmp_path: Path) -> None:
    """Every case of every parser in one folder tree, loaded with the default parsers."""
    from ragloom.core import FileSystemDocumentLoader, RagloomError

    result = FileSystemDocumentLoader.load_documents(corpus, recursive=True)
    loaded = {
        (Path(d.metadata["absolute_directory_path"]).name, d.metadata["file_name"]) for d in result
    }
    for parser, names in (("text", good_text()), ("html", good_html()), ("pdf", good_pdf())):
        assert {(parser, name) for name in names} <= loaded
    assert {("office", name) for name in good_office()} <= loaded
    assert result.failures
    for failure in result.failures:
        assert isinstance(failure.error, RagloomError), failure
        assert Path(failure.source).name in str(failure.error), failure
    assert not any(SECRET in d.text for d in result if d.metadata["file_name"] != "secret.txt")
