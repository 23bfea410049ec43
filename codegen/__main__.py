"""``python -m codegen``: see :func:`codegen.main`."""

import sys

from codegen import main

if __name__ == "__main__":
    sys.exit(main())
