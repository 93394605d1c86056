"""``python -m tokenmill.cli``: the command without the entry point's interrupt guard (:mod:`tokenmill.__main__`)."""

import sys

from tokenmill.cli import main

sys.exit(main())
