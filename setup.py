"""What goes into the distribution; the rest of the metadata is in pyproject.toml.

The folder `server/` installs as the package `shapescript_server` (`server` is too
generic a name for site-packages). The docs pages the tools open (`shapescript explain`,
every diagnostic's link) ship inside the core as `shapescript_core/docs/`, built from
the checkout's `docs/`; `shapescript_core.explain.docs_dir()` finds them in either place.
"""
from setuptools import find_packages, setup

CORE = find_packages(include=["shapescript_core", "shapescript_core.*"])
SERVER = ["shapescript_server" + p[len("server"):] for p in find_packages(include=["server", "server.*"])]

setup(
    packages=CORE + SERVER + ["shapescript_core.docs", "shapescript_core.docs.errors"],
    package_dir={"shapescript_server": "server", "shapescript_core.docs": "docs"},
    package_data={
        "shapescript_core": ["syntax/*.lark"],
        "shapescript_core.docs": ["*.md"],  # the pages link each other
        "shapescript_core.docs.errors": ["*.md"],
    },
)
