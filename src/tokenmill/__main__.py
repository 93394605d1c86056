"""The ``tokenmill`` command's entry point (``python -m tokenmill`` too): Ctrl-C at any moment ends in one line.

The command's modules import numpy, orjson, tokenizers and more (~0.2 s). An interrupt that lands
meanwhile, before :func:`tokenmill.cli.main` handles its own, would print Python's traceback of the
import, or worse: a C extension interrupted inside its own initialisation can crash (orjson's did, with
a segmentation fault, in 1 of 23 tries). So SIGINT is held back while they load, and one that came
meanwhile is taken right after: one line, exit status 130. Only the builtin ``_signal``, ``sys`` and ``os``
(loaded by Python's start already) come first (``signal`` itself builds enums on import: a few ms more
before SIGINT is held).

An interrupt that lands in a weakref callback or a ``__del__`` cannot be raised there: Python prints
"Exception ignored" with a traceback and goes on, the interrupt lost. The command raises it again, to be
taken in its own code. And once the CLI has returned, SIGINT and SIGTERM are ignored: only the exit is left.

numpy's OpenBLAS starts a thread per core when numpy is imported, which the command never uses (it does no
linear algebra): one thread unless the environment says otherwise. A start then costs 0.22 CPU-s instead of
0.32 on 2 cores (bench/RESULTS.md). Snakemake sets the variable for its jobs already (to the rule's threads).
"""

import _signal
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Loaded with SIGINT held back: the CLI and the extension modules its verbs import later (~10 ms).
_STARTUP_MODULES = ("tokenmill.cli", "orjson", "tokenizers")


def main() -> int:
    """Import the CLI and run it; an interrupt during the imports, or in the CLI's last lines past its own
    handling, is one line and exit status 130."""
    can_hold = hasattr(_signal, "pthread_sigmask")
    sys.unraisablehook = _interrupt_again
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

        return run()
    except KeyboardInterrupt:
        print("tokenmill: interrupted", file=sys.stderr)
        return 128 + _signal.SIGINT
    finally:  # only the exit is left: an interrupt would stop nothing, and print a traceback of Python's shutdown
        for signum in (_signal.SIGINT, _signal.SIGTERM):
            _signal.signal(signum, _signal.SIG_IGN)


def _interrupt_again(unraisable) -> None:
    """``sys.unraisablehook``: an interrupt that landed in code Python cannot raise from (a weakref callback
    run by the garbage collector, a ``__del__``) was printed as "Exception ignored" and lost, and the command
    went on; it is sent to the main thread again instead, to be taken in the command's own code. From
    another thread, 20 ms after this hook's last statement: sent from here, Python would take it here at once
    and lose it again, and a thread that sent it after a fixed delay from its start could, on a loaded machine,
    send it while this hook still waited for that start."""
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        import threading

        # SIGTERM's is the CLI's one subclass of KeyboardInterrupt
        signum = _signal.SIGINT if unraisable.exc_type is KeyboardInterrupt else _signal.SIGTERM
        hook_done = threading.Event()
        resend = threading.Thread(target=_send_when_done, args=(hook_done, threading.main_thread().ident, signum),
                                  daemon=True)
        resend.start()
        hook_done.set()
    else:
        sys.__unraisablehook__(unraisable)


def _send_when_done(hook_done, thread_id: int, signum: int) -> None:
    """Send ``signum`` to ``thread_id`` 20 ms after ``hook_done`` is set (:func:`_interrupt_again`)."""
    import time

    hook_done.wait()
    time.sleep(0.02)
    _signal.pthread_kill(thread_id, signum)


if __name__ == "__main__":
    sys.exit(main())
