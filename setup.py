"""Build hook for the optional compiled borrow path (all metadata is in pyproject.toml).

The extension is optional: where it cannot be compiled, the install still
succeeds and Pineapple uses the pure-Python RefValue/ResourceHandle.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pineapple.resource._cref",
            sources=["pineapple/resource/_cref.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
