"""codegen: placeholder until its issue lands."""

__all__: list[str] = []
