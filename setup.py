"""What goes into the distribution; the rest of the metadata is in pyproject.toml.

Two packages, `shapescript_core` and `shapescript_server`, each the folder of its name.
The docs pages the tools open (`shapescript explain`, every diagnostic's link) ship
inside the core as `shapescript_core/docs/`, built from the checkout's `docs/`;
`shapescript_core.explain.docs_dir()` finds them in either place.
"""
from setuptools import find_packages, setup

PACKAGES = find_packages(include=["shapescript_core", "shapescript_core.*", "shapescript_server", "shapescript_server.*"])

setup(
    packages=PACKAGES + ["shapescript_core.docs", "shapescript_core.docs.errors"],
    package_dir={"shapescript_core.docs": "docs"},
    package_data={
        "shapescript_core": ["syntax/*.lark"],
        "shapescript_server": ["initialize_answers.json"],  # initialize_answer.py
        "shapescript_core.docs": ["*.md"],  # the pages link each other
        "shapescript_core.docs.errors": ["*.md"],
    },
)
