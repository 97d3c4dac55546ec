"""scripts/new_package.py: every kind generates a complete, lint-clean package whose
conformance test runs and fails on the skeleton's "implement me" hints.
The store and retriever skeletons are written with core's author helpers.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

from ragloom.core import plugins

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "new_package.py"
HELPER_MODULES = {
    "store": {
        "ragloom.core.stores",
        "ragloom.core.kit.remote_store",
        "ragloom.core.kit.metadata_codec",
        "ragloom.core.filter_compiler",
    },
    "retriever": {"ragloom.core.retrievers.dynamic", "ragloom.core.stores.validation"},
}
CLOSED_PORT_URL = "http://127.0.0.1:1"  # nothing listens there: server fixtures must fail


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("new_package", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["new_package"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


GENERATOR = load_generator()
KINDS = sorted(GENERATOR.KINDS)


def name_for(kind: str) -> str:
    """The longest allowed name, with a hyphen: checks line lengths and ``-`` -> ``_``."""
    return f"{kind}-acme".ljust(GENERATOR.MAX_NAME, "x")


def generate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository root with one generated package of every kind."""
    root = tmp_path_factory.mktemp("repo")
    lib = Path("scripts", "services", "lib")  # the generated service scripts source it
    shutil.copytree(REPO / lib, root / lib)
    env = Path("scripts", "services", "env.sh")  # and this, which the generator extends
    shutil.copy(REPO / env, root / env)
    for kind in KINDS:
        result = generate(root, "--kind", kind, "--name", name_for(kind), "--client", "acme>=1")
        assert result.returncode == 0, result.stderr
    return root


def package_files(root: Path, kind: str) -> dict[str, Path]:
    name = name_for(kind)
    module = name.replace("-", "_")
    package = root / "packages" / f"{kind}-{name}"
    source = package / "src" / "ragloom" / GENERATOR.KINDS[kind].namespace / module
    return {
        "pyproject": package / "pyproject.toml",
        "readme": package / "README.md",
        "init": source / "__init__.py",
        "module": source / f"{kind}.py",
        "typed": source / "py.typed",
        "test": package / "tests" / f"test_{module}_conformance.py",
    }


def pythonpath(root: Path) -> dict[str, str]:
    sources = [str(p) for p in sorted(root.glob("packages/*/src"))]
    inherited = os.environ.get("PYTHONPATH", "")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*sources, inherited]))
    for kind in KINDS:
        env[f"RAGLOOM_{name_for(kind).replace('-', '_').upper()}_URL"] = CLOSED_PORT_URL
    return env


@pytest.mark.parametrize("kind", KINDS)
def test_files_exist_and_compile(root: Path, kind: str) -> None:
    files = package_files(root, kind)
    assert all(path.is_file() for path in files.values()), files
    for path in (files["init"], files["module"], files["test"]):
        compile(path.read_text(), str(path), "exec")
    service = root / "scripts" / "services" / f"{name_for(kind)}.sh"
    assert service.is_file() == GENERATOR.KINDS[kind].server


def test_generated_code_is_ruff_clean(root: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--config",
            str(REPO / "pyproject.toml"),
            str(root / "packages"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_pyproject_names_the_distribution_and_entry_point(root: Path, kind: str) -> None:
    name = name_for(kind)
    with package_files(root, kind)["pyproject"].open("rb") as file:
        project = tomllib.load(file)
    assert project["project"]["name"] == f"ragloom-{kind}-{name}"
    assert project["project"]["dynamic"] == ["version"]  # from the repository's VERSION
    assert project["tool"]["hatch"]["version"]["path"] == "../../VERSION"
    assert project["project"]["dependencies"] == ["ragloom-core", "acme>=1"]
    assert project["dependency-groups"]["test"] == ["ragloom-testkit"]
    groups = project["project"]["entry-points"]
    group = GENERATOR.KINDS[kind].group
    assert group in plugins.GROUPS  # a real group of ragloom.core.plugins
    assert list(groups) == [group]
    target = groups[group][name]
    assert target.startswith(f"ragloom.{GENERATOR.KINDS[kind].namespace}.{name.replace('-', '_')}:")


def test_every_kind_has_an_entry_point_group() -> None:
    """Each kind registers in its group: components in the component groups, the kinds
    with a zero-argument default (parsers, models) in the default groups."""
    groups = {kind: GENERATOR.KINDS[kind].group for kind in KINDS}
    assert groups == {
        "chat": plugins.CHAT_MODELS,
        "embedding": plugins.EMBEDDING_MODELS,
        "loader": plugins.DOCUMENT_LOADERS,
        "parser": plugins.DOCUMENT_PARSERS,
        "retriever": plugins.CONTENT_RETRIEVERS,
        "scoring": plugins.SCORING_MODELS,
        "store": plugins.EMBEDDING_STORES,
        "transformer": plugins.DOCUMENT_TRANSFORMERS,
    }


@pytest.mark.parametrize("kind", KINDS)
def test_readme_has_the_sections_to_fill(root: Path, kind: str) -> None:
    readme = package_files(root, kind)["readme"].read_text()
    assert readme.startswith(f"# ragloom-{kind}-{name_for(kind)}\n")
    sections = ("## Install", "## Usage", "## Capabilities and deviations", "## Tested against")
    assert all(section in readme for section in sections)
    group = GENERATOR.KINDS[kind].group
    assert f"Registered as `{name_for(kind)}` in the `{group}` entry-point group." in readme


@pytest.mark.parametrize("kind", sorted(HELPER_MODULES))
def test_store_and_retriever_skeletons_use_the_core_helpers(root: Path, kind: str) -> None:
    tree = ast.parse(package_files(root, kind)["module"].read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert HELPER_MODULES[kind] <= imported


def test_skeletons_import_and_entry_points_resolve(root: Path) -> None:
    targets = []
    for kind in KINDS:
        with package_files(root, kind)["pyproject"].open("rb") as file:
            groups = tomllib.load(file)["project"].get("entry-points", {})
        targets += [t for group in groups.values() for t in group.values()]
        targets.append(
            f"ragloom.{GENERATOR.KINDS[kind].namespace}.{name_for(kind).replace('-', '_')}:__all__"
        )
    code = (
        "import importlib, sys\n"
        "for target in sys.argv[1:]:\n"
        "    module, _, attrs = target.partition(':')\n"
        "    obj = importlib.import_module(module)\n"
        "    for attr in attrs.split('.'):\n"
        "        obj = getattr(obj, attr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *targets],
        env=pythonpath(root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_conformance_tests_fail_with_implement_me(root: Path, tmp_path: Path) -> None:
    """Each skeleton's own test runs and fails: on "implement me", or (server kinds, no
    server) on the message naming the command that starts the service."""
    kinds = list(KINDS)
    report = tmp_path / "report.xml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            f"--junitxml={report}",
            *(str(package_files(root, kind)["test"]) for kind in kinds),
        ],
        cwd=root,
        env=pythonpath(root),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    cases = list(ET.parse(report).getroot().iter("testcase"))
    for kind in kinds:
        suite = "Test" + "".join(part.capitalize() for part in name_for(kind).split("-"))
        problems = [
            (problem.get("message") or "") + (problem.text or "")
            for case in cases
            if (case.get("classname") or "").endswith(f".{suite}Conformance")
            for problem in (*case.iter("failure"), *case.iter("error"))
        ]
        assert problems, f"{kind}: no test failed"
        expected = (
            f"bash scripts/services/{name_for(kind)}.sh start"
            if GENERATOR.KINDS[kind].server
            else "implement me"
        )
        assert all(expected in text for text in problems), (kind, problems)


@pytest.mark.parametrize("kind", sorted(k for k in KINDS if GENERATOR.KINDS[k].server))
def test_service_script_is_a_stub_that_says_what_to_implement(root: Path, kind: str) -> None:
    script = root / "scripts" / "services" / f"{name_for(kind)}.sh"
    text = script.read_text()
    port = GENERATOR.port_for(name_for(kind))
    assert 10000 < port < 32768
    variable = f"RAGLOOM_{name_for(kind).replace('-', '_').upper()}"
    env_sh = (root / "scripts" / "services" / "env.sh").read_text()
    assert f"export {variable}_PORT=${{{variable}_PORT:-{port}}}" in env_sh
    assert f"export {variable}_URL=${{{variable}_URL:-http://127.0.0.1:${variable}_PORT}}" in env_sh
    assert f"PORT=${variable}_PORT" in text
    assert "source scripts/services/env.sh" in text
    assert "HOST=127.0.0.1" in text
    assert f"BASE=$RAGLOOM_SERVICES_DIR/{name_for(kind)}" in text
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    status = subprocess.run(["bash", str(script), "status"], capture_output=True, text=True)
    assert status.returncode == 1
    assert "not running" in status.stdout
    start = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True)
    assert start.returncode != 0
    assert "implement me" in start.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "store", "--name", "Qdrant"], "--name 'Qdrant'"),
        (["--kind", "store", "--name", "my_db"], "--name 'my_db'"),
        (["--kind", "store", "--name", "9db"], "--name '9db'"),
        (["--kind", "store", "--name", "db--x"], "--name 'db--x'"),
        (["--kind", "store", "--name", "x" * 25], "up to 24"),
        (["--kind", "stores", "--name", "qdrant"], "--kind 'stores': use one of store, "),
        (["--kind", "store", "--name", "qdrant", "--client", "a'b"], "--client"),
    ],
)
def test_bad_arguments_are_refused(tmp_path: Path, args: list[str], message: str) -> None:
    result = generate(tmp_path, *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "packages").exists()


def test_an_existing_package_is_not_overwritten(tmp_path: Path) -> None:
    assert generate(tmp_path, "--kind", "parser", "--name", "acme").returncode == 0
    readme = tmp_path / "packages" / "parser-acme" / "README.md"
    readme.write_text("edited")
    result = generate(tmp_path, "--kind", "parser", "--name", "acme")
    assert result.returncode == 2
    assert "refusing to overwrite: packages/parser-acme" in result.stderr
    assert readme.read_text() == "edited"


def test_no_service_omits_the_script(tmp_path: Path) -> None:
    assert generate(tmp_path, "--kind", "store", "--name", "acme", "--no-service").returncode == 0
    assert (tmp_path / "packages" / "store-acme" / "pyproject.toml").is_file()
    assert not (tmp_path / "scripts").exists()


CONTRIBUTING = REPO / "docs" / "contributing.md"
MAX_ADAPTER_LINES = 300  # issue 33: a new remote store in at most this much code
EXAMPLE_TEST = """
import uuid

import pytest

from example_store import ExampleEmbeddingStore
from ragloom.testkit import EmbeddingStoreFilterSuite, EmbeddingStoreSuite


class TestExampleConformance(EmbeddingStoreSuite, EmbeddingStoreFilterSuite):
    @pytest.fixture
    def store(self, dimension):
        store = ExampleEmbeddingStore(":memory:", f"t_{uuid.uuid4().hex[:8]}", dimension=dimension)
        yield store
        store.close()
"""


def worked_example() -> str:
    """The store of docs/contributing.md's worked example (its code block)."""
    blocks = re.findall(r"```python\n(.*?)```", CONTRIBUTING.read_text(), re.DOTALL)
    [code] = [b for b in blocks if "class ExampleEmbeddingStore(RemoteEmbeddingStore)" in b]
    return str(code)


def store_methods(source: str) -> set[str]:
    """The methods of the module's store class."""
    return {
        node.name
        for cls in ast.parse(source).body
        if isinstance(cls, ast.ClassDef) and cls.name.endswith("EmbeddingStore")
        for node in cls.body
        if isinstance(node, ast.FunctionDef)
    }


def test_the_worked_example_is_the_store_skeleton_filled_in(root: Path) -> None:
    code = worked_example()
    assert len(code.splitlines()) <= MAX_ADAPTER_LINES
    skeleton = store_methods(package_files(root, "store")["module"].read_text())
    assert "_fetch" in skeleton
    assert store_methods(code) == skeleton
    assert "implement me" not in code


def test_the_worked_example_passes_the_store_suites(tmp_path: Path) -> None:
    """The example runs on qdrant-client's local mode (store-qdrant's dependency, installed
    by scripts/setup.sh with every package): without it this fails, never skips."""
    (tmp_path / "example_store.py").write_text(worked_example())
    (tmp_path / "test_example_conformance.py").write_text(EXAMPLE_TEST)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert re.search(r"\b\d{2,} passed\b", result.stdout), result.stdout[-2000:]


def generate_in_process(root: Path) -> dict[str, Path]:
    """A store generated with --in-process, named as the worked example's class."""
    result = generate(root, "--kind", "store", "--name", "example", "--in-process")
    assert result.returncode == 0, result.stderr
    package = root / "packages" / "store-example"
    return {
        "module": package / "src" / "ragloom" / "stores" / "example" / "store.py",
        "test": package / "tests" / "test_example_conformance.py",
        "readme": package / "README.md",
        "src": package / "src",
    }


def run_generated_test(test: Path, src: Path) -> subprocess.CompletedProcess[str]:
    inherited = os.environ.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=test.parent,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), inherited])),
        capture_output=True,
        text=True,
        check=False,
    )


def test_an_in_process_store_has_no_server_parts(tmp_path: Path) -> None:
    files = generate_in_process(tmp_path)
    assert not (tmp_path / "scripts").exists()  # no service script, env.sh untouched
    test = files["test"].read_text()
    for server_part in ("integration", "require_server", "server_url", "scripts/services"):
        assert server_part not in test
    assert "scripts/services" not in files["readme"].read_text()
    assert "        path: str," in files["module"].read_text()
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
         str(REPO / "pyproject.toml"), str(tmp_path / "packages")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stdout
    refused = generate(tmp_path, "--kind", "loader", "--name", "x", "--in-process")
    assert refused.returncode == 2
    assert "--in-process: only for --kind store, not loader" in refused.stderr


def test_an_in_process_store_passes_its_generated_test_unchanged(tmp_path: Path) -> None:
    """The skeleton's test fails on "implement me"; with the skeleton filled in (the
    worked example on Qdrant's local mode, a directory per store) the same, unedited
    test passes: the checklist's "passes unchanged" holds for in-process stores."""
    files = generate_in_process(tmp_path)
    before = run_generated_test(files["test"], files["src"])
    assert before.returncode == 1
    assert "implement me" in before.stdout
    filled = (
        worked_example()
        .replace("self.url = url", "self.path = path")
        .replace("        url: str,", "        path: str,")
        .replace('f"connecting to {self.url}", QdrantClient, location=self.url', (
            'f"opening {self.path}", QdrantClient, path=self.path'
        ))
    )  # fmt: skip
    assert "url" not in filled.replace("NAMESPACE_URL", "")
    files["module"].write_text(filled)
    test_before = files["test"].read_text()
    after = run_generated_test(files["test"], files["src"])
    assert after.returncode == 0, after.stdout[-4000:] + after.stderr[-2000:]
    assert re.search(r"\b\d{2,} passed\b", after.stdout), after.stdout[-2000:]
    assert files["test"].read_text() == test_before


def test_the_guide_documents_the_metadata_type_helpers() -> None:
    """The suite's hint for a mistyped metadata write points at core's
    stores.metadata_types; the guide lists its helpers, by names that exist."""
    from ragloom.core.stores import metadata_types

    guide = CONTRIBUTING.read_text()
    _, entry = guide.split("- `ragloom.core.stores.metadata_types`:")
    entry = entry.split("\n- ")[0]
    named = set(re.findall(r"`(\w+)\(", entry))
    assert named >= {"batch_kinds", "conflicting_kinds", "check_held", "held_type_error"}
    assert named <= set(metadata_types.__all__)
