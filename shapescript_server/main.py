"""`shapescript-lsp`: the language server over stdio (default) or TCP (`--tcp HOST:PORT`,
for debugging: connect an editor to it and read its log)."""
from __future__ import annotations

import argparse
import logging
import sys

from . import fast_start


def _hostport(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got `{value}`")
    return host or "127.0.0.1", int(port)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="shapescript-lsp", description="The ShapeScript language server")
    ap.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    ap.add_argument("--tcp", type=_hostport, metavar="HOST:PORT", help="listen on a TCP port instead")
    ap.add_argument("--log-file", help="write the log here instead of stderr")
    ap.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                    help="INFO and DEBUG also log every message (pygls)")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    handler = logging.FileHandler(args.log_file, encoding="utf-8") if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(level=getattr(logging, args.log_level), handlers=[handler],
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    early = None if args.tcp else fast_start.run()  # before pygls is loaded (fast_start.py)
    # imported here, not above, to defer pygls and lsprotocol (about 0.5 s of CPU) until
    # fast_start has answered what it could (docs/architecture.md, tests/test_layering.py)
    from .features import create_server  # deferred: pygls
    from .transport import serve_io, serve_tcp  # deferred: pygls

    ls = create_server()
    status = 0
    try:
        if args.tcp:
            serve_tcp(ls, *args.tcp)
        else:
            status = serve_io(ls, early=early)
    finally:
        ls.shutdown_core()
    return status


if __name__ == "__main__":
    sys.exit(main())
