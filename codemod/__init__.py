"""transformers-codemod: migrate prepare_inputs_for_generation overrides onto GenerationMixin, and prove nothing changed.

The library's entry points are in :mod:`codemod.api` (``from codemod import api``).
"""

__version__ = "0.1.0"
