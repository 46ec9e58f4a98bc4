import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# the language servers the tests start keep large files' parsed items in a cache of the
# test session, not in the user's (shapescript_core/syntax/parse_cache.py)
if "SHAPESCRIPT_CACHE_DIR" not in os.environ:
    import tempfile
    os.environ["SHAPESCRIPT_CACHE_DIR"] = tempfile.mkdtemp(prefix="shapescript-test-cache-")
