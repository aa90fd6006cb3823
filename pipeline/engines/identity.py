"""One cache-identity rule for every engine: what an engine's answers are keyed under is its
constructor's parameters (as the engine keeps them) minus the ones it declares TRANSPORT, which
change only how answers arrive (where from, how many at once, how long to wait), never what they
are. A parameter added later is part of the identity unless it is declared transport, so a new
setting that changes the answers can never share cached answers by omission (Inspect's cache keeps
its one exclusion set in the key function the same way).

Two more declarations, each for a stated reason:
- LEFT_OUT_AT: a parameter left out while it has this value, so that the keys of the answers
  cached before it existed stay valid (`revision` of the OpenAI engine; the parallel sizes of vLLM
  at 1, which give the answers of one device);
- `derived_identity()`: facts the answers depend on that are no constructor parameter (the
  oracle reads the gold).
"""

from __future__ import annotations

import inspect
from typing import Any


def cache_identity(engine: Any) -> dict[str, Any]:
    """{"engine": KIND} and every constructor parameter of `engine`'s class (a **kwargs parameter:
    each of its keys) but its TRANSPORT ones, with the value the engine keeps (an attribute of the
    parameter's name), then its `derived_identity()`."""
    cls = type(engine)
    transport = frozenset(getattr(cls, "TRANSPORT", ()))
    left_out_at = dict(getattr(cls, "LEFT_OUT_AT", {}))
    params: dict[str, Any] = {}
    # every class's own constructor, the subclass's first: a **kwargs it passes on to its parent is
    # the parent's parameters (read there); one it keeps (vLLM's llm_kwargs) is an attribute
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        for name, parameter in inspect.signature(vars(klass)["__init__"]).parameters.items():
            if name == "self" or parameter.kind is parameter.VAR_POSITIONAL:
                continue
            if parameter.kind is parameter.VAR_KEYWORD:
                for key, value in (getattr(engine, name, None) or {}).items():
                    params.setdefault(key, value)
            else:
                params.setdefault(name, getattr(engine, name))
    identity = {"engine": cls.KIND}
    for name, value in params.items():
        if name in transport or (name in left_out_at and value == left_out_at[name]):
            continue
        identity[name] = value
    derived = getattr(engine, "derived_identity", None)
    return identity | (derived() if derived is not None else {})
