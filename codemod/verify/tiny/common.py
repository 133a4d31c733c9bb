"""What every part of ``tiny`` shares: its error, the shapes of its dicts, quiet calls into transformers,
and what a model's signatures and config say."""

from __future__ import annotations

import contextlib
import inspect
import io
import warnings
from typing import TYPE_CHECKING, Any

import transformers

# torch and transformers exist only in the verification environment this package runs in, not in the
# tool's venv where it is type-checked: their objects (models, configs, tensors, generators) are Any.
if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    from typing import TypeGuard

    #: a config as a dict (``PretrainedConfig.to_dict()``, or a sub-config's): JSON-able values by key
    ConfigDict = dict[str, Any]
    #: one row of :data:`tiny.shrink.SIZES`: a size for each kind of attribute in :data:`tiny.shrink.GROUPS`
    Size = dict[str, int]
    #: keyword arguments for ``generate()`` (tensors, and a few other values some models need)
    Inputs = dict[str, Any]


class TinyModelError(Exception):
    """A tiny model (or its inputs) can't be made for this class; the message is a one-line reason."""


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def quiet() -> contextlib.ExitStack[bool | None]:
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    try:
        logging = transformers.utils.logging
        previous = logging.get_verbosity()
        logging.set_verbosity_error()
        stack.callback(logging.set_verbosity, previous)
    except Exception:  # pragma: no cover - very old or very new transformers
        pass
    return stack


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    text = f"{type(error).__name__}: {text}"
    return text if len(text) <= 300 else text[:297] + "..."


def takes(method: Any, name: str) -> bool:
    """Whether ``method`` (a model's ``forward`` or ``generate``) has a parameter ``name``."""
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def text_config(config: Any) -> Any:
    """The config of the part that generates text (the decoder's, a composite's text config), else ``config``."""
    getter = getattr(config, "get_text_config", None)
    if getter is not None:
        try:
            return getter(decoder=True)
        except Exception:
            pass
    for name in ("text_config", "decoder"):
        sub = getattr(config, name, None)
        if sub is not None and not isinstance(sub, dict):
            return sub
    return config
