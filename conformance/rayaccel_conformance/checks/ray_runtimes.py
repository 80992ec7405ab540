"""The vendor runtime a Ray manager asks for the node's device name, stood in by one answering a name the suite
chooses, to learn how Ray frames that name into the node's accelerator type (RAC270's
``accelerator-type-as-ray-answers-it`` where the runtime cannot be wired to the simulated machine).

Ray 2.60's HPU manager answers ``"Intel-" + habana_frameworks.torch.hpu.get_device_name()`` once the HPU runtime is
initialised (ray/_private/accelerators/hpu.py); no fixture records that runtime's answer (hl-smi prints the module's
board name, ``HL-225``, the runtime ``GAUDI2``), so the suite cannot say which name Ray gives a machine, only the
frame around it, which Ray keeps for every device. The stand-in is a module under the runtime's import name whose
functions say the runtime is present and initialised and answer the chosen name; Ray's own import-time probe of the
package (``is_package_present``) is asked again while it stands, and both are undone after. Ray's manager is called,
never patched.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import itertools
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Two names no runtime gives, asked in turn: what Ray's answers share around them is its frame.
STAND_IN_NAMES = ("RACNAMEA", "RACNAMEB")


@dataclass(frozen=True)
class Runtime:
    """Where a manager's module reads its runtime: the module it imports, the function naming the device, and the
    module global keeping Ray's import-time probe of the package (None: probed at each call)."""

    module: str
    name_function: str
    present_flag: str | None


#: The runtimes Ray 2.60's managers import to name the device, by manager class (the others read NVML, amdsmi, a
#: metadata server or the environment, which the suite wires or leaves unwired).
RUNTIMES = {
    "HPUAcceleratorManager": Runtime("habana_frameworks.torch.hpu", "get_device_name", "HPU_PACKAGE_AVAILABLE"),
}


def _stand_in(name: str, device_name: str, name_function: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__path__ = []  # a package: its submodules import through it
    module.is_available = lambda: True  # type: ignore[attr-defined]
    module.is_initialized = lambda: True  # type: ignore[attr-defined]
    module.device_count = lambda: 1  # type: ignore[attr-defined]
    setattr(module, name_function, lambda *_: device_name)
    return module


def _installed(package: str) -> bool:
    """Whether the real runtime is on this node (a Gaudi host graded with real hardware): never stood in then."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


@contextlib.contextmanager
def runtime_standing_in(manager: Any, device_name: str) -> Iterator[bool]:
    """Ray's manager with its runtime answering ``device_name``; yields False where the suite has no stand-in for it
    (or the real runtime is installed: then nothing is replaced)."""
    runtime = RUNTIMES.get(getattr(manager, "__name__", ""))
    ray_module = sys.modules.get(getattr(manager, "__module__", ""))
    parts = runtime.module.split(".") if runtime else []
    if runtime is None or ray_module is None or parts[0] in sys.modules or _installed(parts[0]):
        yield False
        return
    names = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]
    modules = {name: _stand_in(name, device_name, runtime.name_function) for name in names}
    for outer, inner in itertools.pairwise(names):
        setattr(modules[outer], inner.rsplit(".", 1)[1], modules[inner])
    probe = getattr(ray_module, "is_package_present", None)
    flag = runtime.present_flag
    before = vars(ray_module).get(flag) if flag else None
    sys.modules.update(modules)
    try:
        if flag:
            if probe is not None and hasattr(probe, "cache_clear"):
                probe.cache_clear()
                vars(ray_module)[flag] = probe(parts[0])
            else:
                vars(ray_module)[flag] = True
        yield True
    finally:
        for name in names:
            sys.modules.pop(name, None)
        if flag:
            vars(ray_module)[flag] = before
            if probe is not None and hasattr(probe, "cache_clear"):
                probe.cache_clear()


def ray_type_frame(manager: Any) -> tuple[str, str] | None:
    """(prefix, suffix) Ray's manager writes around the runtime's device name to type the node; None where there is
    no stand-in for its runtime or its answers do not hold the names given (a manager mapping names)."""
    answers = []
    for name in STAND_IN_NAMES:
        with runtime_standing_in(manager, name) as standing:
            if not standing:
                return None
            try:
                answer = manager.get_current_node_accelerator_type()
            except Exception:  # Ray's manager failing with the stand-in says nothing of the plugin
                return None
        if not isinstance(answer, str) or answer.count(name) != 1:
            return None
        answers.append(answer.split(name))
    (prefix, suffix), other = answers[0], answers[1]
    return (prefix, suffix) if [prefix, suffix] == other else None


def in_frame(accelerator_type: str | None, frame: tuple[str, str]) -> bool:
    """Whether ``accelerator_type`` is a name in Ray's frame (something between its prefix and its suffix)."""
    prefix, suffix = frame
    return (accelerator_type is not None and len(accelerator_type) > len(prefix) + len(suffix)
            and accelerator_type.startswith(prefix) and accelerator_type.endswith(suffix))
