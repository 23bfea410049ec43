"""Build hook for the optional C extensions (all metadata is in pyproject.toml).

Both are optional: where they cannot be compiled, the install still
succeeds. Without ``_cref`` Pineapple uses the pure-Python
RefValue/ResourceHandle; without ``_untrack`` feed_data columns are left to
the garbage collector to untrack (one long collection after each load).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pineapple.resource._cref",
            sources=["pineapple/resource/_cref.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "resources._untrack",
            sources=["resources/_untrack.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
