import sys
from pathlib import Path

import pytest

from ragloom.core import ClassPathDocumentLoader, DocumentLoadError, PackageResourceDocumentLoader


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A real importable package with data files, put on ``sys.path``."""
    root = tmp_path / "ragloom_fixture_pkg"
    (root / "docs" / "nested").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "docs" / "one.txt").write_text("first doc")
    (root / "docs" / "two.md").write_text("second doc")
    (root / "docs" / "blank.txt").write_text("   ")
    (root / "docs" / "nested" / "three.txt").write_text("third doc")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ragloom_fixture_pkg"
    sys.modules.pop("ragloom_fixture_pkg", None)


def test_load_one_resource(package: str) -> None:
    doc = PackageResourceDocumentLoader.load_document(package, "docs/one.txt")
    assert doc.text == "first doc"
    assert doc.metadata.to_dict() == {
        "package": package,
        "resource": "docs/one.txt",
        "file_name": "one.txt",
    }


def test_load_directory_with_failures(package: str) -> None:
    docs = ClassPathDocumentLoader.load_documents(package, "docs")
    assert [d.text for d in docs] == ["first doc", "second doc"]
    assert [f.source for f in docs.failures] == [f"{package}:docs/blank.txt"]


def test_recursive_and_glob(package: str) -> None:
    docs = PackageResourceDocumentLoader.load_documents(
        package, "docs", recursive=True, glob="*.txt"
    )
    assert sorted(d.text for d in docs) == ["first doc", "third doc"]


def test_errors_name_the_resource(package: str) -> None:
    with pytest.raises(DocumentLoadError, match="docs/none.txt"):
        PackageResourceDocumentLoader.load_document(package, "docs/none.txt")
    with pytest.raises(DocumentLoadError, match="no_such_package_xyz"):
        PackageResourceDocumentLoader.load_documents("no_such_package_xyz")
