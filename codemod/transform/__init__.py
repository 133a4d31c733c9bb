"""Transform: from findings to edits (``plan``), edits to new file text (``rewrite``), and the rounds
that keep only what stays consistent (``apply``); ``hooks`` and ``hook_changes`` for the mined hooks."""
