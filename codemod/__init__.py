"""transformers-codemod: migrate prepare_inputs_for_generation overrides onto GenerationMixin, and prove nothing changed."""

__version__ = "0.1.0"
