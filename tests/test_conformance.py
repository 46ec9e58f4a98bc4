"""The shared conformance cases, through the real CLI (../shared/conformance/run.py).

They run when the shared contract is beside the checkout (CI has it); a plain clone skips
them, saying why. The cases the other tests read are copied into tests/programs/ok/ and
tests/programs/export/, the security reproductions into tests/programs/security/; the
last tests keep those copies equal to the shared files."""
import os
import subprocess
import sys

import pytest

from checkout import CLI_COMMAND, PROGRAMS, SHARED, cli_env, requires_shared

pytestmark = requires_shared


@pytest.mark.parametrize("folder", ["ok", "core", "export"])
def test_conformance(folder):
    runner = os.path.join(SHARED, "conformance", "run.py")
    p = subprocess.run([sys.executable, runner, "--cli", CLI_COMMAND, os.path.join(SHARED, "conformance", folder)],
                       capture_output=True, text=True, timeout=600, env=cli_env())
    assert p.returncode == 0, p.stdout + p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert last.endswith(" 0 failed") and not last.startswith("0 passed"), last


@pytest.mark.parametrize("folder", ["ok", "export"])
def test_the_copies_in_tests_programs_are_the_shared_cases(folder):
    copies = sorted(os.listdir(os.path.join(PROGRAMS, folder)))
    assert copies, folder
    for name in copies:
        with open(os.path.join(PROGRAMS, folder, name), encoding="utf-8") as fh:
            copy = fh.read()
        with open(os.path.join(SHARED, "conformance", folder, name), encoding="utf-8") as fh:
            assert copy == fh.read(), f"tests/programs/{folder}/{name} differs from the shared case: copy it again"


def test_the_copies_of_the_security_reproductions_are_the_shared_ones():
    copies = sorted(os.listdir(os.path.join(PROGRAMS, "security")))
    assert copies
    for name in copies:
        with open(os.path.join(PROGRAMS, "security", name), encoding="utf-8") as fh:
            copy = fh.read()
        with open(os.path.join(SHARED, "repro", "security", name), encoding="utf-8") as fh:
            assert copy == fh.read(), f"tests/programs/security/{name} differs from the shared reproduction: copy it again"
