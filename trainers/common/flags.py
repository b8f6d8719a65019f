"""Command-line flags from a settings dataclass: the one parser of every training command.

Each field becomes ``--field-name`` (a field without a default is a required flag); its help is
the docstring under the field (CleanRL's style) or, failing that, its entry in the class
docstring's ``Attributes:`` section, with the default. Booleans become ``--flag/--no-flag``,
``Literal`` fields take their choices, ``dict`` fields JSON, ``list`` fields comma-separated
items (``''``: an empty list), and an optional field also ``none``. A Transformers or TRL
config object (``SFTConfig``, ``GRPOConfig``) is read from its own flags by
:func:`parse_config`, with the library's parser.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Args:
    ...     steps: int = 3
    ...     '''updates to make'''
    ...     names: list[str] | None = None
    ...     '''who takes part'''
    >>> parse_args(Args, ["--steps", "5", "--names", "a,b"])
    Args(steps=5, names=['a', 'b'])
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import inspect
import json
import math
import re
import textwrap
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from agentworld_envs.cli_errors import UsageError, UsageParser, directory_arg
from trainers.common.args import ConfigError

__all__ = ["ConfigHelp", "add_dataclass_args", "check_config_values", "check_model_folder",
           "config_help", "dataclass_from_args", "field_docs", "holds_model", "json_object",
           "parse_args", "parse_config", "parse_with_config"]

T = TypeVar("T")


def field_docs(cls: type) -> dict[str, str]:
    """The help of each field of dataclass ``cls`` (and its bases): the docstring under the
    field, else the field's entry in the class docstring's ``Attributes:`` section."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(_attribute_docs(klass))
            docs.update(_field_docstrings(klass))
    return docs


def _field_docstrings(klass: type) -> dict[str, str]:
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
    except (OSError, TypeError):  # defined where its source cannot be read
        return {}
    return {statement.target.id: " ".join(following.value.value.split())
            for statement, following in zip(body, body[1:], strict=False)
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)}


def _attribute_docs(klass: type) -> dict[str, str]:
    """The ``name: text`` entries (with indented continuation lines) of ``Attributes:``."""
    doc = inspect.cleandoc(klass.__doc__ or "")
    section = doc.split("Attributes:", 1)[1] if "Attributes:" in doc else ""
    found: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        entry = re.match(r"^ {4}(\w+): ?(.*)$", line)
        if entry:
            name = entry.group(1)
            found[name] = entry.group(2).strip()
        elif name and line.startswith(" " * 8):
            found[name] += " " + line.strip()
        elif line.strip():
            name = ""
    return found


def _converter(hint: Any) -> tuple[Any, dict[str, Any]]:
    """An argparse ``type`` for a field, and extra ``add_argument`` keywords; its name is what
    an unreadable value's error says was expected."""
    options = [h for h in typing.get_args(hint) if h is not type(None)]
    if type(None) not in typing.get_args(hint) or len(options) != 1:
        return _plain_converter(hint)
    convert, extra = _plain_converter(options[0])

    def read(text: str) -> Any:
        return None if text.lower() == "none" else convert(text)

    read.__name__ = f"{convert.__name__} or none"
    if "choices" in extra:
        extra = {**extra, "choices": (*extra["choices"], None)}
    return read, extra


def _plain_converter(hint: Any) -> tuple[Any, dict[str, Any]]:
    if typing.get_origin(hint) is Literal:
        return type(typing.get_args(hint)[0]), {"choices": typing.get_args(hint)}
    if dict in (hint, typing.get_origin(hint)):
        return json_object, {}
    if typing.get_origin(hint) is list:
        item = typing.get_args(hint)[0]

        def items(text: str) -> list[Any]:
            return [item(part) for part in text.split(",") if part]

        items.__name__ = f"comma-separated {getattr(item, '__name__', item)}"
        return items, {}
    if hint is bool:  # an optional bool (a plain one is --flag/--no-flag)
        return _boolean, {}
    return hint, {}


def json_object(text: str) -> dict[str, Any]:
    """A flag's JSON object (argparse's ``type``: anything else is a one-line error)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def _boolean(text: str) -> bool:
    words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    if text.lower() not in words:
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return words[text.lower()]


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per field of dataclass ``cls`` to ``parser``."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    for item in dataclasses.fields(cls):
        flags = ["--" + item.name.replace("_", "-")] + (["--" + item.name] if "_" in item.name
                                                        else [])
        required = (item.default is dataclasses.MISSING
                    and item.default_factory is dataclasses.MISSING)
        default = None if required else (item.default if item.default is not dataclasses.MISSING
                                         else item.default_factory())
        text = docs.get(item.name, "") + ("" if required else f" (default: {default})")
        text = text.replace("%", "%%")  # argparse formats help with %
        if hints[item.name] is bool:
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, default=default,
                                required=required, help=text)
            continue
        convert, extra = _converter(hints[item.name])
        parser.add_argument(*flags, type=convert, default=default, required=required, help=text,
                            metavar=item.name.upper(), **extra)


def dataclass_from_args(cls: type[T], namespace: argparse.Namespace) -> T:
    """Build ``cls`` from flags parsed by a parser :func:`add_dataclass_args` filled."""
    return cls(**{item.name: getattr(namespace, item.name) for item in dataclasses.fields(cls)})


def parse_args(cls: type[T], argv: Sequence[str] | None = None, prog: str | None = None) -> T:
    """Build ``cls`` from command-line flags named after its fields (``--total-episodes``).

    Raises:
        UsageError: a flag that is unknown, missing or cannot be read, in one line.
    """
    parser = UsageParser(prog=prog, description=inspect.getdoc(cls))
    add_dataclass_args(parser, cls)
    return dataclass_from_args(cls, parser.parse_args(argv))


def _config_parser(config_cls: type, defaults: dict[str, Any], prog: str | None) -> Any:
    """Transformers' ``HfArgumentParser`` for ``config_cls``, whose errors raise
    :class:`~trainers.common.args.ConfigError` instead of exiting, and whose flags default to
    ``defaults`` (shown in ``--help``) and to nothing else (a flag not given is left out)."""
    from transformers import HfArgumentParser

    class Parser(HfArgumentParser):
        def error(self, message: str) -> typing.NoReturn:
            raise ConfigError(config_cls.__name__, message)

    parser = Parser(config_cls, prog=prog, allow_abbrev=False, add_help=False)
    for action in parser._actions:
        if action.dest != "help":  # argparse would run a string default through the flag's type
            action.default = defaults.get(action.dest, argparse.SUPPRESS)
    return parser


def parse_config(config_cls: type[T], argv: Sequence[str], defaults: dict[str, Any] | None = None,
                 prog: str | None = None) -> T:
    """A Transformers or TRL config object (``SFTConfig``, ``GRPOConfig``) from the library's
    own flags (``--learning_rate`` or ``--learning-rate``, as ``HfArgumentParser`` reads them),
    starting from ``defaults`` instead of the library's.

    Raises:
        ConfigError: an unknown flag (naming the nearest known ones), a bad value, or settings
            the config itself refuses, in one line.
    """
    parser = _config_parser(config_cls, {}, prog)
    given, unused = parser.parse_known_args(list(argv))
    if unused:
        known = [o for action in parser._actions for o in action.option_strings]
        flag = next((u for u in unused if u.startswith("-")), unused[0])
        close = difflib.get_close_matches(flag.split("=")[0], known, n=2, cutoff=0.7)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise ConfigError(config_cls.__name__, f"unrecognized arguments: {' '.join(unused)}{hint}")
    settings = {**(defaults or {}), **vars(given)}
    check_config_values(settings)
    try:
        return config_cls(**settings)
    except ValueError as exc:  # the config's own checks (a setting this machine cannot run)
        raise ConfigError(config_cls.__name__, " ".join(str(exc).split())) from exc


_COUNT = (lambda value: value >= 1, "at least 1")
_NOT_NEGATIVE = (lambda value: value >= 0, "at least 0")
_CONFIG_BOUNDS: dict[str, tuple[Callable[[float], bool], str]] = {
    **dict.fromkeys(("per_device_train_batch_size", "per_device_eval_batch_size",
                     "gradient_accumulation_steps", "num_iterations", "steps_per_generation",
                     "generation_batch_size", "max_length", "max_prompt_length",
                     "max_completion_length"), _COUNT),
    "num_generations": (lambda value: value >= 2, "at least 2"),
    "max_steps": (lambda value: value >= 1 or value == -1,
                  "at least 1, or -1 for num_train_epochs to decide"),
    **dict.fromkeys(("learning_rate", "weight_decay", "num_train_epochs", "max_grad_norm",
                     "beta", "epsilon", "top_k", "dataloader_num_workers"), _NOT_NEGATIVE),
    **dict.fromkeys(("temperature", "repetition_penalty"), (lambda value: value > 0, "above 0")),
    "top_p": (lambda value: 0 < value <= 1, "above 0 and at most 1"),
    "min_p": (lambda value: 0 <= value <= 1, "from 0 to 1"),
    **dict.fromkeys(("seed", "data_seed"), (lambda value: 0 <= value < 2**32,
                                            "from 0 to 2**32 - 1")),
}
"""Ranges of Transformers and TRL settings that the configs take unchecked and that fail only
once training has started (a traceback, a hang, or sampling at a negative temperature)."""


def check_config_values(settings: dict[str, Any]) -> None:
    """Refuse a non-finite number, a setting outside :data:`_CONFIG_BOUNDS`, or an
    ``output_dir`` that cannot be a folder, naming its flag in a
    :class:`~trainers.common.args.ConfigError`."""
    if settings.get("output_dir") is not None:
        try:
            directory_arg(str(settings["output_dir"]))
        except argparse.ArgumentTypeError as exc:
            raise ConfigError("output_dir", str(exc)) from None
    for name, value in settings.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        within, requirement = _CONFIG_BOUNDS.get(name, (math.isfinite, "a finite number"))
        if not (math.isfinite(value) and within(value)):
            raise ConfigError(name, f"must be {requirement}, not {value}")


def holds_model(path: str | Path) -> bool:
    """Whether ``path`` is a folder transformers loads a model from: a model's
    (``config.json``) or a LoRA adapter's (``adapter_config.json``)."""
    folder = Path(path).expanduser()
    return any((folder / name).is_file() for name in ("config.json", "adapter_config.json"))


def check_model_folder(model: str | None) -> None:
    """A ``--model`` naming a local model folder (or a LoRA adapter's) that exists, checked
    before any work; None (the script's own model) passes.

    Raises:
        UsageError: no such folder, or one with neither ``config.json`` nor
            ``adapter_config.json`` (transformers then fails with a hub-name error or a
            tokenizer traceback).
    """
    if model is None:
        return
    if not Path(model).expanduser().is_dir():
        raise UsageError(f"--model {model}: no such folder (a local model directory)")
    if not holds_model(model):
        raise UsageError(f"--model {model}: holds no model (no config.json or "
                         f"adapter_config.json)")


def config_help(config_cls: type, defaults: dict[str, Any] | None = None) -> str:
    """The flags of ``config_cls`` as ``--help`` lists them, with ``defaults`` shown."""
    text = _config_parser(config_cls, defaults or {}, None).format_help()
    options = text.split("options:", 1)[-1]
    return f"{config_cls.__name__} flags (TRL and Transformers settings):{options}"


ConfigSource = Callable[[], tuple[type, dict[str, Any]]]
"""Loads a library's config class and returns it with our defaults for it (imported only when
a command runs or shows its help)."""


class ConfigHelp(argparse.Action):
    """``-h``/``--help``: the parser's own flags, then those of a library config."""

    def __init__(self, option_strings: list[str], dest: str, config: ConfigSource,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show this help, and the flags of the library's config, then exit")
        self.config = config

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser.print_help()
        print("\n" + config_help(*self.config()))
        parser.exit()


def parse_with_config(cls: type[T], config: ConfigSource, argv: Sequence[str] | None = None,
                      prog: str | None = None) -> tuple[T, Any]:
    """``cls`` from its flags and the library config from the rest (as TRL's scripts read
    ``(ScriptArguments, GRPOConfig)``); ``--help`` lists both.

    Raises:
        UsageError: one of ``cls``'s flags is missing or cannot be read.
        ConfigError: one of the library config's flags, or its settings (see
            :func:`parse_config`).
    """
    parser = UsageParser(prog=prog, description=inspect.getdoc(cls), add_help=False,
                         allow_abbrev=False)
    parser.add_argument("-h", "--help", action=ConfigHelp, config=config)
    add_dataclass_args(parser, cls)
    namespace, rest = parser.parse_known_args(argv)
    config_cls, defaults = config()
    return dataclass_from_args(cls, namespace), parse_config(config_cls, rest, defaults, prog)
