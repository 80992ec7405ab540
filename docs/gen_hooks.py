"""Render docs/hooks.md from the hook spec's docstrings: `python docs/gen_hooks.py > docs/hooks.md`.

tests/docs/test_docs.py fails when docs/hooks.md differs from this output, so the reference cannot go stale.
"""

from __future__ import annotations

import inspect
import re

from rayaccel import hookspec
from rayaccel.plugins.conventions import CONVENTIONS

INTRO = f"""# Hook reference

A plugin is a module registered under the `rayaccel` entry-point group:

```toml
[project.entry-points.rayaccel]
acme = "rayaccel_acme.plugin"
```

Hooks are plain functions named `rayaccel_*` (decorate them with `rayaccel.hookimpl`; undecorated ones are
recognised too). The SDK calls each hook **once per plugin**, through pluggy (the plugin's own wrappers and
`tryfirst`/`trylast` apply; `PluginManager.pluggy` gives tracing and call monitoring), in a worker thread
bounded by `RAYACCEL_HOOK_TIMEOUT` (default 10 s), and validates the result into the record named below
(the spec declares it, with the default and the fix: `rayaccel.hookspec.HOOKS`). An exception, a hang or a
malformed result becomes a `Problem` for that plugin and hook (a list answer is checked record by record: a
malformed device, report or sample is left out with a problem naming it, the field and the value, and the rest
are kept); the other plugins carry on. A plugin bounds its
own in-process vendor calls (a C library that may hang) with the same runner, `rayaccel.run_bounded`; its
simulated library adapter blocks with `rayaccel.simulated_hang()` where the fixture wedges the library, so a
bounded call on a simulated host gives up at once, charged its timeout ([fixtures.md](fixtures.md)).
All hooks of one inventory share one deadline (`RAYACCEL_INVENTORY_TIMEOUT`, default 30 s), and a plugin
whose hook hung is not called again in that inventory. What a hook prints and any change it makes to
`os.environ` are kept from the caller and reported (`printed`, `environ-changed`): log with `logging`, and
pass an env to the vendor call instead (see [architecture.md](architecture.md)).
A hook may accept any subset of its parameters, and a hook that is exactly a function of one of the plugin's
modules may be that function (`rayaccel_health = hookimpl(health.health_of)`: pluggy checks its parameter names
against the spec when the plugin registers). A family's reason codes are a table of `(code, state, fatal,
meaning)` rows kept beside the code that reports them, declared with
`health_reasons=rayaccel.ReasonCode.table(REASONS)`. A hook that cannot do its job (a vendor tool hung or printed
garbage) raises `rayaccel.HookError(message, fix=..., code=...)`: the problem then carries the plugin's own
words and fix instead of a generic "raised". Records are in `rayaccel.records` (exported by `rayaccel`).

**Importing costs nothing.** A plugin's module imports `from rayaccel import Device, FamilyDeclaration, hookimpl`
without loading pydantic (~110 ms): until `rayaccel.records` is imported, each record name `rayaccel` hands out
is a stand-in (`rayaccel.support.lazy.DeferredClass`) that imports the record at its first use and hands every call on
to it: `Device(...)` returns a `rayaccel.records.Device`, validated as always (a bad value raises pydantic's
`ValidationError`), `Device.model_validate` and the other class attributes are the record's, `isinstance(x,
Device)` and subclassing (`class MyDevice(Device)`) work, and a stand-in in a pydantic annotation validates as
the record. Compare classes with `isinstance`, not `type(x) is Device`. The vocabulary `rayaccel` exports
(`ID_FALLBACK`, `DEVICE_FILE`, `HEALTH_ORDER`, the `HealthState` type) loads no pydantic either; build records in
hooks, not at module level (a module-level record loads pydantic at the plugin's import). A plugin imports
`rayaccel` and nothing below it (the `plugins-use-the-public-api` import contract): every name it needs is
exported there.

**Partial results.** A hook that read most of what it needed returns that, and reports the rest with
`rayaccel.report_problem(code, message, fix=..., severity="warning")`: one malformed field of one device
(`memory.total: 'abc'`), a cut or garbled line, a count that disagrees with sysfs. Each report becomes a
`Problem` naming the plugin and the hook, and the family's other devices are still reported; raising would
lose them all. `rayaccel.vendor_int` / `vendor_float` read one vendor value defensively (wrong
type, not a number, not finite, outside the physically possible range: `None` and a `malformed-value`
report quoting the field and the value). Reports are kept per hook call (at most 50, duplicates dropped); a
thread of the plugin's own reports through `contextvars.copy_context().run(...)`; tests capture reports with
`rayaccel.collect_problems()`.

**Vendor libraries.** A hook reads the machine only through its `host` (`rayaccel.Host`: env, files,
commands, HTTP), and a vendor Python library (bindings to a management library, like NVML) the same way: the
plugin owns an adapter, `rayaccel.LibraryAdapter(name, open_real, open_simulated)` (two callables, nothing
imported by name), and calls `host.library(adapter)`. A real host calls `open_real()` once, which raises
`LibraryUnavailable` when the library or its driver is missing (any other exception is turned into one); a
simulated host calls `open_simulated(data)` with the fixture's `host.libraries.<name>` data
([fixtures.md](fixtures.md)). On empty data (`{{}}`) the simulated adapter still gives the library's constants
and exception classes: a call log recorded by `rayaccel record` is replayed on top of it. Examples:
`rayaccel_nvidia.nvml.NVML`, `rayaccel_amd.amdsmi.AMDSMI`, the template's `python-library` probe.

Spec version: **{hookspec.SPEC_VERSION}**. A plugin declares the version it was written for in
`FamilyDeclaration.spec_version`; a different major version is refused, any minor version is accepted.
Required hooks: {", ".join(f"`{h}`" for h in hookspec.REQUIRED_HOOKS)}.
"""


def _markdown(doc: str) -> str:
    doc = re.sub(r":(?:func|class|data):`~?([^`]*)`", r"`\1`", doc)
    doc = re.sub(r"``([^`]*)``", r"`\1`", doc)
    doc = re.sub(r"\.\. versionadded:: (\S+)", r"*Added in spec \1.*", doc)
    head, sep, tail = doc.partition("Example::\n\n")
    if not sep:
        return doc
    lines = tail.split("\n")
    code = []
    while lines and (lines[0].startswith("    ") or lines[0] == ""):
        code.append(lines.pop(0)[4:])
    return head + "Example:\n\n```python\n" + "\n".join(code).strip() + "\n```\n\n" + "\n".join(lines)


def render() -> str:
    hooks = sorted((fn for name, fn in vars(hookspec).items() if name.startswith("rayaccel_") and callable(fn)),
                   key=lambda fn: inspect.getsourcelines(fn)[1])
    parts = [INTRO]
    for fn in hooks:
        info = hookspec.HOOKS[fn.__name__]
        result = info.result
        result_name = getattr(result, "__name__", None) if not hasattr(result, "__origin__") else None
        result_name = result_name or str(result).replace("rayaccel.records.", "").replace("typing.", "")
        signature = str(inspect.signature(fn)).replace("'", "")
        meta = (f"Validated into: `{result_name}`. Without an answer (not implemented, failed, or `None`): "
                f"{inspect.getdoc(info.default)}. A malformed answer's fix: {info.fix}.")
        if fn.__name__ in CONVENTIONS:
            meta += (f" **Convention:** a plugin that does not implement it, and has "
                     f"{CONVENTIONS[fn.__name__].describe()}, gets it answered from there "
                     "([architecture.md](architecture.md#layout-conventions)).")
        parts.append(f"## `{fn.__name__}`\n\n`{fn.__name__}{signature}`\n\n"
                     f"{meta}\n\n{_markdown(inspect.getdoc(fn) or '').strip()}\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(render(), end="")
