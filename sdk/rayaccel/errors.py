"""Errors the SDK raises to its callers. Each carries one message a person can act on."""

from __future__ import annotations


class RayaccelError(Exception):
    """Bad input or an unusable setup: the CLI prints the message on one line and exits with code 2."""

    exit_code = 2


class HookError(Exception):
    """Raised by a plugin's hook to report a problem in its own words: the manager records the message,
    the plugin's fix and code instead of a generic "raised" problem (e.g. a vendor tool that hangs)."""

    def __init__(self, message: str, fix: str | None = None, code: str = "vendor-error") -> None:
        super().__init__(message)
        self.fix = fix
        self.code = code


class FixtureError(RayaccelError):
    """A fixture that cannot be found, read or validated."""


class PluginError(RayaccelError):
    """A plugin that cannot be found or used as asked."""


class DeclarationError(PluginError):
    """A plugin declares something that cannot be used as declared (a class that does not import, a name another
    party holds): the plugin's defect, not the caller's; the message names the plugin, the declaration and the fix."""


class CatalogError(RayaccelError):
    """A SKU catalog that does not validate."""
