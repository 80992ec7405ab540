"""Finding the processes a command left behind: the test sets a mark in the command's environment, which every
process it starts inherits."""

from __future__ import annotations

import psutil


def leftovers(variable: str, mark: str) -> list[psutil.Process]:
    """Live processes (not zombies) whose environment has ``variable`` set to ``mark``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(variable) == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found
