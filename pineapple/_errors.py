"""The error classes of Pineapple: one class per failure kind.

Every error raised on purpose by the library is a :class:`PineappleError`.
Messages name what was wrong (the resource, operator, parameter or field) and
never carry a secret: callers that format user-supplied values into a message
pass them through :func:`pineapple.resource.lowlevel.redact` first.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AnswerTooLargeError",
    "ConfigError",
    "DeadlineExceededError",
    "DuplicateRegistrationError",
    "ExecutionError",
    "HandleReleasedError",
    "ManagerStateError",
    "MissingResourceError",
    "PineappleError",
    "RegistryError",
    "StartError",
    "ValidationError",
]


class PineappleError(Exception):
    """Base class of every error Pineapple raises on purpose."""


class ConfigError(PineappleError):
    """A configuration (unified JSON, resource entry, operator params) is invalid."""


class RegistryError(PineappleError):
    """An operator or resource type is unknown, or its params do not fit its schema."""


class ValidationError(PineappleError):
    """A request or response violates the flow contract."""


class ExecutionError(PineappleError):
    """An operator failed while a request was executed.

    ``operator``: the failing operator's name (None when not known).
    ``result``: the partial response (``{"common", "items"}``) projected from
    the request frame at the time of the failure, or None.
    The operator's own exception, if any, is the ``__cause__``.
    """

    def __init__(self, message: str, *, operator: str | None = None, result: Any = None) -> None:
        super().__init__(message)
        self.operator = operator
        self.result = result


class DeadlineExceededError(ExecutionError):
    """A request ran past its deadline (``Context.deadline``).

    ``operator`` names the operator that was running (or about to run) when
    the deadline passed; the server answers it with HTTP 504.
    """


class AnswerTooLargeError(ExecutionError):
    """A request's answer would pass its size bound (``Engine.run(max_answer_bytes=)``).

    ``operator`` names the operator whose writes would pass it (None when the
    encoded answer was measured after the run); the server answers it with
    HTTP 507 and no partial result.
    """


class DuplicateRegistrationError(RegistryError):
    """A name (resource, resource type or operator type) was registered twice."""


class ManagerStateError(PineappleError):
    """A Manager call that its life-cycle state does not allow (register after start, ...)."""


class MissingResourceError(ConfigError):
    """Operators reference resources that the manager does not have.

    ``missing`` lists ``(operator, resource_name)`` pairs.
    """

    def __init__(self, message: str, missing: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.missing = missing


class StartError(PineappleError):
    """The first fetch of one or more resources failed.

    ``failures`` maps each failed resource name to its (redacted) reason.
    """

    def __init__(self, message: str, failures: dict[str, str]) -> None:
        super().__init__(message)
        self.failures = failures


class HandleReleasedError(PineappleError):
    """A resource handle was used after it was released, or released twice."""
