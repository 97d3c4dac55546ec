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
