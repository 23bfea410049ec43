"""Built-in operators (importing this package registers them)."""

__all__: list[str] = []
