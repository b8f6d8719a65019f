"""The base of the suite's errors that carry fields: they survive a trip between processes.

Gymnasium's ``AsyncVectorEnv`` pickles a worker's error and raises ``type(error)(error)`` in the
parent. An error whose constructor takes more than its message failed both: the caller got a
``TypeError``, and ``close()`` then waited forever. A :class:`FieldedError` gets both right
whatever its constructor: it pickles as its arguments and fields, and its class called with one
of its own instances returns a copy.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["FieldedError"]


class _CopiedFromOwnInstance(type):
    """Calling the class with one instance of exactly that class copies the instance."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and type(args[0]) is cls:
            return copy.copy(args[0])
        return super().__call__(*args, **kwargs)


class FieldedError(Exception, metaclass=_CopiedFromOwnInstance):
    """An error with fields beyond its message; picklable and copyable whatever its constructor.

    Example:
        >>> class Late(FieldedError):
        ...     def __init__(self, what: str, seconds: float) -> None:
        ...         super().__init__(f"{what} took {seconds} s")
        ...         self.seconds = seconds
        >>> again = Late(Late("step", 2.0))  # what AsyncVectorEnv raises in the parent
        >>> type(again).__name__, str(again), again.seconds
        ('Late', 'step took 2.0 s', 2.0)
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), self.args, self.__dict__)


def _rebuild(cls: type[FieldedError], args: tuple[Any, ...],
             fields: dict[str, Any]) -> FieldedError:
    error = cls.__new__(cls, *args)  # sets args; __init__ is not called again
    error.__dict__.update(fields)
    return error
