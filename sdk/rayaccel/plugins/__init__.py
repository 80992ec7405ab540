"""Loading plugins and calling their hooks: the manager, layout conventions, the configuration that picks
which plugins load, and what an in-process call may not change."""
