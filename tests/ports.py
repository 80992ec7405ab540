"""Free TCP ports for tests that start Ray nodes beside others (never Ray's fixed defaults): the SDK's own
choice, outside the kernel's ephemeral range, so a port chosen here is not handed to another process's
``bind(0)`` or connection before the node binds it."""

from __future__ import annotations

from rayaccel.support.ports import free_ports

__all__ = ["free_ports"]
