"""The class of :mod:`rayaccel_testplugins.nvidia_host_copy`'s transport: the SDK's shared-memory class under its own
name (it moves host memory alone). Importing it appends this process's pid to the file ``HOST_COPY_IMPORTS`` names,
so a test sees which processes imported the plugin's transport code."""

from __future__ import annotations

import os

from rayaccel import SharedMemoryTransport

if os.environ.get("HOST_COPY_IMPORTS"):
    with open(os.environ["HOST_COPY_IMPORTS"], "a", encoding="utf-8") as imports:
        imports.write(f"{os.getpid()}\n")


class HostCopy(SharedMemoryTransport):
    def tensor_transport_backend(self) -> str:
        return "NV_HOST_COPY"
