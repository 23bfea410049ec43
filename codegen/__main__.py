"""``python -m codegen``: see :func:`codegen.run`."""

import sys

from codegen._main import main

if __name__ == "__main__":
    sys.exit(main())
