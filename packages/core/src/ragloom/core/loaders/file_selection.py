"""Which files a directory load reads: the files under the given paths, minus what nobody
wants indexed. One rule for the Python API (:class:`FileSystemDocumentLoader`,
``ragloom.easy_rag.load_documents``) and the ``ragloom ingest`` command line.

Skipped under a directory unless ``skip_ignored`` is false: hidden files and folders
(``.git``, ``.env``, ``.venv``, ...), ``node_modules``, ``__pycache__``, virtualenvs (any
folder holding a ``pyvenv.cfg``) and whatever a ``.gitignore`` inside the tree ignores
(each applies to its own folder and below, negations included). ``include`` and
``exclude`` are gitignore-style patterns matched against the path relative to the given
directory (``*.md``, ``drafts/``, ``guides/**/*.md``): with ``include``, only matching
files are read; ``exclude`` drops files and whole folders. A file named explicitly is
always read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = [
    "SKIPPED_DIRECTORIES",
    "GITIGNORE",
    "select_files",
]

SKIPPED_DIRECTORIES = frozenset({"node_modules", "__pycache__"})
GITIGNORE = ".gitignore"

# (folder of a .gitignore, its patterns), outermost first
_Ignores = list[tuple[Path, GitIgnoreSpec]]


def _ignored(path: Path, is_dir: bool, ignores: _Ignores) -> bool:
    suffix = "/" if is_dir else ""
    return any(
        spec.match_file(path.relative_to(base).as_posix() + suffix) for base, spec in ignores
    )


def _read_gitignore(directory: Path) -> GitIgnoreSpec | None:
    try:
        lines = (directory / GITIGNORE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    return GitIgnoreSpec.from_lines(lines)


def _skipped_directory(path: Path) -> bool:
    return path.name in SKIPPED_DIRECTORIES or (path / "pyvenv.cfg").is_file()


def _walk(
    root: Path,
    include: GitIgnoreSpec | None,
    exclude: GitIgnoreSpec,
    *,
    recursive: bool,
    skip_ignored: bool,
) -> Iterator[Path]:
    inherited: dict[Path, _Ignores] = {root: []}
    for directory, dirnames, filenames in os.walk(root):
        here = Path(directory)
        ignores = inherited.pop(here)
        if skip_ignored and GITIGNORE in filenames:
            spec = _read_gitignore(here)
            if spec is not None:
                ignores = [*ignores, (here, spec)]

        def keep(name: str, is_dir: bool, here: Path = here, ignores: _Ignores = ignores) -> bool:
            path = here / name
            relative = path.relative_to(root).as_posix() + ("/" if is_dir else "")
            if exclude.match_file(relative):
                return False
            return not skip_ignored or not (name.startswith(".") or _ignored(path, is_dir, ignores))

        dirnames[:] = [
            name
            for name in dirnames
            if recursive
            and not (skip_ignored and _skipped_directory(here / name))
            and keep(name, True)
        ]
        for name in dirnames:
            inherited[here / name] = ignores
        for name in filenames:
            path = here / name
            if (
                keep(name, False)
                and path.is_file()
                and (include is None or include.match_file(path.relative_to(root).as_posix()))
            ):
                yield path


def select_files(
    paths: Iterable[Path],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    recursive: bool = True,
    skip_ignored: bool = True,
) -> list[Path]:
    """The files to read under ``paths``, sorted; see the module docstring.

    ``recursive=False`` reads only the files directly in each directory. A path that is
    neither a file nor a directory raises :class:`FileNotFoundError`.
    """
    include_spec = GitIgnoreSpec.from_lines(include) if include else None
    exclude_spec = GitIgnoreSpec.from_lines(exclude)
    found: set[Path] = set()
    for path in paths:
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            found.update(
                _walk(
                    path,
                    include_spec,
                    exclude_spec,
                    recursive=recursive,
                    skip_ignored=skip_ignored,
                )
            )
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")
    return sorted(found)
