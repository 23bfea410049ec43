"""Placeholder: the codegen issue replaces this with the real generator."""

import sys

if __name__ == "__main__":
    sys.exit(0)
