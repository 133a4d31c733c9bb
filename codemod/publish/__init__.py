"""Publish: what a scan or a migration reports (``report``, ``hooks_report``) and the pull requests
the bot opens with the evidence (``pr``)."""
