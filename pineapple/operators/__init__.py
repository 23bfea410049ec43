"""Built-in operators (importing this package registers them)."""

from . import _lua_operator  # noqa: F401  (transform_by_lua)

__all__: list[str] = []
