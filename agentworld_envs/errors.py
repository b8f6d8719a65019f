"""The base of the suite's errors that carry fields: they survive a trip between processes.

Gymnasium's ``AsyncVectorEnv`` pickles a worker's error and raises ``type(error)(error)`` in the
parent. An error whose constructor takes more than its message failed both: the caller got a
``TypeError``, and ``close()`` then waited forever. A :class:`FieldedError` gets both right
whatever its constructor: it pickles as its arguments and fields, and its class called with one
of its own instances returns a copy.

An error from outside the suite (a library's, Python's own ``UnicodeDecodeError``) cannot be
made to do so. :func:`transportable` replaces one that would not survive the trip with a
:class:`SubEnvError` carrying its type's name, message and traceback text;
:func:`transportable_errors` does it at an env's ``reset``/``step`` boundary, and
:func:`agentworld_envs.async_worker.async_worker` for everything a worker runs.
"""

from __future__ import annotations

import copy
import functools
import pickle
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["FieldedError", "SubEnvError", "transportable", "transportable_errors"]

_Method = TypeVar("_Method", bound=Callable[..., Any])


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


class SubEnvError(FieldedError, RuntimeError):
    """An error that could not cross a process boundary as itself, by name, message and
    traceback text.

    Attributes:
        error_type: The original error's ``module.QualifiedName``.
        message: Its message (``str(error)``).
        traceback: Its formatted traceback, where it was raised.
    """

    def __init__(self, error_type: str, message: str, traceback: str = "") -> None:
        super().__init__(f"{error_type}: {message} (raised in a sub-env, where it could not "
                         "be sent back as itself; its traceback is in .traceback)")
        self.error_type, self.message, self.traceback = error_type, message, traceback


def _survives(error: BaseException) -> bool:
    """Whether ``error`` pickles, unpickles, and its class rebuilds it from itself (what
    Gymnasium's ``AsyncVectorEnv`` does with a worker's error)."""
    if isinstance(error, FieldedError):
        return True
    try:
        copied = pickle.loads(pickle.dumps(error))
        type(error)(copied)
    except Exception:  # noqa: BLE001 - any failure means it cannot make the trip
        return False
    return type(copied) is type(error)


def transportable(error: BaseException) -> BaseException:
    """``error`` itself if it survives a trip between processes, else a :class:`SubEnvError`
    with its name, message and traceback (and ``error`` as its ``__cause__`` here).

    Example:
        >>> import json
        >>> moved = transportable(json.JSONDecodeError("Expecting value", "x", 0))
        >>> type(moved).__name__, moved.error_type, moved.message
        ('SubEnvError', 'json.decoder.JSONDecodeError', 'Expecting value: line 1 column 1 (char 0)')
        >>> transportable(KeyError("k")).__class__.__name__
        'KeyError'
    """
    if _survives(error):
        return error
    cls = type(error)
    moved = SubEnvError(f"{cls.__module__}.{cls.__qualname__}", str(error),
                        "".join(traceback.format_exception(error)))
    moved.__cause__ = error
    return moved


def transportable_errors(method: _Method) -> _Method:
    """Wrap an env method so that what it raises can reach an ``AsyncVectorEnv``'s caller
    (see :func:`transportable`)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as error:
            moved = transportable(error)
            if moved is error:
                raise
            raise moved from error

    return wrapper  # type: ignore[return-value]
