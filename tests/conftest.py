import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.path.append(os.path.join(ROOT, "scripts"))  # lockfile.py: the locks' reader (tests/test_locks.py)

# the language servers the tests start keep large files' parsed items in a cache of the
# test session, not in the user's (shapescript_core/syntax/parse_cache.py)
if "SHAPESCRIPT_CACHE_DIR" not in os.environ:
    import tempfile
    os.environ["SHAPESCRIPT_CACHE_DIR"] = tempfile.mkdtemp(prefix="shapescript-test-cache-")

# transformers copies an export's remote code (modeling_*.py) into a modules cache keyed
# by the folder's name: a suite of its own, so two test runs at once (or an earlier run's
# files) never hand a test another export's modeling file mid-import
if "HF_MODULES_CACHE" not in os.environ:
    import tempfile
    os.environ["HF_MODULES_CACHE"] = tempfile.mkdtemp(prefix="shapescript-test-hf-modules-")
