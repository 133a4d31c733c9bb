"""What transformers-codemod knows about ``prepare_inputs_for_generation``.

Each module here is one behaviour recogniser with a stable code (``PI1xx`` standard input
preparation, ``PI17x`` model-specific, ``PI19x`` plumbing), a docstring example and its cases
(``rules.base``). The modules are discovered, not listed: every module of this package but the
private ones and ``HELPERS`` is a rule, and ``ALL`` lists their rules in code order (a module that
is not a well-formed rule fails the import, naming itself). ``rules.guards`` holds the ``if`` tests
the engine understands; ``rules.doc`` renders the rules (``codemod explain``, ``docs/rules.md``).
"""

from __future__ import annotations

from codemod.rules.base import Kind, Rule, discover

#: the modules of this package that are not rules
HELPERS = frozenset({"base", "doc", "generic_mixin", "guards", "values"})

ALL: tuple[Rule, ...] = discover(__name__, __path__, HELPERS)
BY_CODE = {rule.code: rule for rule in ALL}
BY_NAME = {rule.name: rule for rule in ALL}

__all__ = ["ALL", "BY_CODE", "BY_NAME", "HELPERS", "Kind", "Rule"]
