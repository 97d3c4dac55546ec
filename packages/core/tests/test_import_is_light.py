import subprocess
import sys

HEAVY = [
    "onnxruntime",
    "tokenizers",
    "sqlalchemy",
    "boto3",
    "torch",
    "transformers",
    "requests",
    "httpx",
    "pymilvus",
    "psycopg",
    "qdrant_client",
    "langchain_core",
    "pandas",
    "pydantic",
    "scipy",
]


def test_core_import_pulls_in_no_heavy_dependency() -> None:
    code = (
        "import sys, ragloom.core\n"
        f"heavy = {HEAVY!r}\n"
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def _ragloom(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] == "ragloom")


def test_the_core_facade_loads_none_of_its_names() -> None:
    assert _ragloom(_loaded_after("import ragloom.core")) == [
        "ragloom",
        "ragloom.core",
        "ragloom.core._lazy",
    ]


def test_the_facade_loads_a_name_with_its_module_only() -> None:
    loaded = _ragloom(_loaded_after("from ragloom.core import Document"))
    assert "ragloom.core.document" in loaded
    assert [m for m in loaded if m.startswith(("ragloom.core.stores", "ragloom.core.bm25"))] == []


def test_the_errors_module_loads_a_handful_of_modules_and_no_engine() -> None:
    loaded = _ragloom(_loaded_after("import ragloom.core.errors"))
    assert len(loaded) <= 5, loaded
    assert [m for m in loaded if m.startswith(("ragloom.core.stores", "ragloom.core.bm25"))] == []
