"""The ``tokenmill`` command's entry point (``python -m tokenmill`` too): Ctrl-C at any moment ends in one line.

The command's modules import numpy, orjson, tokenizers and more (~0.2 s). An interrupt that lands
meanwhile, before :func:`tokenmill.cli.main` handles its own, would print Python's traceback of the
import, or worse: a C extension interrupted inside its own initialisation can crash (orjson's did, with
a segmentation fault, in 1 of 23 tries). So SIGINT is held back while they load, and one that came
meanwhile is taken right after: one line, exit status 130. Only the builtin ``_signal`` and ``sys`` come
first (``signal`` itself builds enums on import: a few ms more before SIGINT is held).
"""

import _signal
import sys

# Loaded with SIGINT held back: the CLI and the extension modules its verbs import later (~10 ms).
_STARTUP_MODULES = ("tokenmill.cli", "orjson", "tokenizers")


def main() -> int:
    """Import the CLI and run it; an interrupt during the imports is one line and exit status 130."""
    can_hold = hasattr(_signal, "pthread_sigmask")
    try:
        if can_hold:
            _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
        try:
            import importlib

            for name in _STARTUP_MODULES:
                importlib.import_module(name)
        finally:
            if can_hold:  # a pending SIGINT raises KeyboardInterrupt here, inside the try
                _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})
        from tokenmill.cli import main as run
    except KeyboardInterrupt:
        print("tokenmill: interrupted", file=sys.stderr)
        return 128 + _signal.SIGINT
    return run()


if __name__ == "__main__":
    sys.exit(main())
