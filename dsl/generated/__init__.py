"""Code written by ``python -m codegen`` from the registries; do not edit by hand."""
