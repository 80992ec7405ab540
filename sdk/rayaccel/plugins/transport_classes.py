"""What a declared transport's manager class says it moves, asked where the plugin's code runs.

A transport declaration names its class by path (``TransportSpec.manager_class``); the class, not the declaration,
knows what its steps move (the SDK's :class:`~rayaccel.transports.shared_memory.SharedMemoryTransport` answers
``moved_device_types() == ("cpu",)`` while its memory steps are its own, whatever devices it is declared for). Asking
imports the plugin's class, so it happens only in the process that already runs the plugin (its isolation worker,
or an in-process manager: a Ray driver, the conformance suite), and the answer travels in the validated record
(``TransportSpec.moved_device_types``). Path selection and the outputs read the record; they never import a plugin.
"""

from __future__ import annotations

from collections.abc import Sequence

from rayaccel.records import TransportSpec
from rayaccel.support.lazy import import_object


def ask_class(spec: TransportSpec) -> TransportSpec:
    """``spec`` with ``moved_device_types`` set to its class's answer, asked in this process (None for one of Ray's
    own transports, a class that does not import here, or one with no answer: the declared devices stand; RAC301
    imports and runs the class and names what is wrong with it)."""
    return spec.model_copy(update={"moved_device_types": None if spec.builtin_in_ray else _answer(spec.manager_class)})


def ask_classes(specs: Sequence[TransportSpec]) -> list[TransportSpec]:
    return [ask_class(spec) for spec in specs]


def _answer(manager_class: str) -> list[str] | None:
    try:
        answer = import_object(manager_class).moved_device_types()
    except Exception:  # not importable here, or no such method: the declaration stands
        return None
    if isinstance(answer, tuple | list) and answer and all(isinstance(device, str) for device in answer):
        return list(answer)
    return None
