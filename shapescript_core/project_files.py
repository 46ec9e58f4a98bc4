"""Which `.ss` files a command covers: the paths it is given (a file as it is, a folder as
every `.ss` file below it), or with no path the project of the current folder: the
nearest folder holding a `shapescript.toml`, from the current folder upward, else the
current folder itself.

Below a folder, the walk is `files.walk_files` (hidden and dependency folders
skipped, symlinks out of the folder not followed, special files left out), without its
bounds (the user asked for that folder), minus what the `exclude` patterns of the
nearest `shapescript.toml` name (see docs/command-line.md). A file named on the command
line is always checked, as ruff and mypy do.
"""
from __future__ import annotations

import fnmatch
import os
from typing import Optional

from .files import walk_files
from .settings import load_config, settings_dir

SUFFIX = ".ss"


class PathError(Exception):
    """A path that names nothing that can be checked."""


def project_root(cwd: Optional[str] = None) -> str:
    """The folder holding the nearest `shapescript.toml` from `cwd` upward, else `cwd`."""
    cwd = os.path.abspath(cwd or os.getcwd())
    return settings_dir(cwd) or cwd


class Exclusions:
    """The `exclude` patterns of a `shapescript.toml`, relative to the folder holding it.

    A pattern without a `/` is matched against each file and folder name (`build`,
    `*_generated.ss`); one with a `/` against the path from that folder (`vendor/*`,
    `experiments/old.ss`). A folder that matches excludes everything below it."""

    def __init__(self, base: str, patterns):
        self.base = os.path.realpath(base)  # the walk gives real paths
        self.patterns = [p.strip().rstrip("/").removeprefix("./") for p in patterns]

    def __call__(self, path: str, is_folder: bool = False) -> bool:
        rel = os.path.relpath(path, self.base).replace(os.sep, "/")
        if rel.startswith("../"):
            return False
        name = rel.rsplit("/", 1)[-1]
        for pat in self.patterns:
            if "/" in pat:
                if fnmatch.fnmatchcase(rel, pat):
                    return True
            elif fnmatch.fnmatchcase(name, pat):
                return True
        return False


def _settings_for(folder: str) -> tuple:
    """(Exclusions or None, the settings' problems) of the nearest `shapescript.toml`."""
    d = settings_dir(folder)
    if d is None:
        return None, []
    cfg = load_config(d)
    return (Exclusions(d, cfg.exclude) if cfg.exclude else None), cfg.problems


def files_to_check(paths, cwd: Optional[str] = None) -> tuple:
    """(files, problems): the `.ss` files `paths` name, each once, in order (no path: the
    project of `cwd`), and the problems of the `shapescript.toml` files read on the way.
    PathError for a path that does not exist."""
    cwd = os.path.abspath(cwd or os.getcwd())
    if not paths:
        paths = [project_root(cwd)]
    files, seen, problems = [], set(), []
    for p in paths:
        full = os.path.normpath(os.path.join(cwd, os.path.expanduser(p)))
        if os.path.isdir(full):
            excluded, found_problems = _settings_for(full)
            problems += [m for m in found_problems if m not in problems]
            found = list(walk_files([full], SUFFIX, max_entries=None, seconds=None, excluded=excluded))
        elif os.path.lexists(full):
            found = [p]  # as given: a file named is checked (and an unreadable one said so)
        else:
            raise PathError(f"can't read `{p}`: no such file or folder")
        for f in found:
            key = os.path.realpath(os.path.join(cwd, f))
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, problems
