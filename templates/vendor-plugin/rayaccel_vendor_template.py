"""The vendor template's answer checks and its sandboxed rendering: answers are data, never code.

cookiecutter renders every answer given as ``key=value`` (and every answer cruft replays from
``.cruft.json`` on an upgrade) as a Jinja template before any hook runs, so a hook alone cannot stop
``{{ ... }}`` in an answer from running. This module is listed in ``cookiecutter.json`` under
``_extensions``; cookiecutter (and cruft) put the template folder on ``sys.path`` and load it into every
Jinja environment they create for this template. :class:`SandboxExtension` then

1. turns the environment into a Jinja ``SandboxedEnvironment`` (no ``__globals__``, no ``os``: a payload
   that gets rendered anyway can reach nothing), and
2. refuses, before it is parsed, any template source that is not part of this template (an answer) and
   holds template syntax or climbs out of the output folder (``..``, an absolute path): the bake stops
   with one message naming the variable, before anything is written.

``problem`` is the full check of a set of answers (the pre-generation hook calls it through the
``rayaccel_answer_problem`` global; ``rayaccel new`` imports it to check each answer at its prompt).
Plain Python and Jinja only: it runs where rayaccel is not installed.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import Environment
from jinja2.exceptions import UndefinedError
from jinja2.ext import Extension
from jinja2.sandbox import SandboxedEnvironment

MODULE_FILE = Path(__file__).name
#: Jinja's default delimiters; the template's ``_jinja2_env_vars`` may add others (checked too).
DEFAULT_DELIMITERS = ("{{", "{%", "{#", "}}", "%}", "#}")
DELIMITER_KEYS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                  "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix")

#: Ray 2.60's built-in accelerator families: (resource name, visible-devices env var). The SDK's
#: rayaccel.support.raycompat holds the same table; when it is importable its entries are used too.
RAY_FAMILIES = {
    "NVIDIA GPUs": ("GPU", "CUDA_VISIBLE_DEVICES"),
    "AMD GPUs": ("GPU", "HIP_VISIBLE_DEVICES"),
    "Intel GPUs": ("GPU", "ZE_AFFINITY_MASK"),
    "Google TPUs": ("TPU", "TPU_VISIBLE_CHIPS"),
    "AWS Neuron": ("neuron_cores", "NEURON_RT_VISIBLE_CORES"),
    "Intel Gaudi": ("HPU", "HABANA_VISIBLE_MODULES"),
    "Huawei Ascend": ("NPU", "ASCEND_RT_VISIBLE_DEVICES"),
    "Rebellions": ("RBLN", "RBLN_DEVICES"),
    "FuriosaAI": ("FURIOSA", "FURIOSA_DEVICES"),
    "Mobilint": ("MBLT", "QBRUNTIME_VISIBLE_DEVICES"),
    "Tenstorrent": ("TTNPU", "TT_VISIBLE_DEVICES"),
}
RAY_RESERVED = {"CPU", "memory", "object_store_memory", "bundle"}
RAY_RESERVED_PREFIXES = ("node:", "accelerator_type:")
#: The rayaccel reference plugins: plugin id -> (resource, env var). Their ids are taken too.
REFERENCE_PLUGINS = {
    "nvidia": ("GPU", "CUDA_VISIBLE_DEVICES"),
    "amd": ("GPU", "HIP_VISIBLE_DEVICES"),
    "tpu": ("TPU", "TPU_VISIBLE_CHIPS"),
    "neuron": ("neuron_cores", "NEURON_RT_VISIBLE_CORES"),
    "gaudi": ("HPU", "HABANA_VISIBLE_MODULES"),
}
RESERVED_IDS = {*REFERENCE_PLUGINS, "conformance", "sdk", "core"}
#: Variables a device-selection variable must never be: the process's and runtimes' own, and other
#: vendors' visibility variables. The SDK's FamilyDeclaration refuses the same (rayaccel.records).
DENIED_ENV_VARS = {
    "PATH", "HOME", "USER", "SHELL", "PWD", "TMPDIR", "LANG", "TERM", "HOSTNAME", "IFS", "PS1", "TZ", "DISPLAY",
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
    "ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR", "NEURON_RT_VISIBLE_CORES", "HABANA_VISIBLE_MODULES",
    "HABANA_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS", "ASCEND_RT_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
}
DENIED_ENV_PREFIXES = ("LD_", "DYLD_", "PYTHON", "RAY_", "OMP_", "MKL_", "OPENBLAS_", "CUDA_", "NCCL_", "ROCM_",
                       "HSA_", "XLA_", "TPU_", "NEURON_", "HABANA_", "LC_", "XDG_", "SSH_", "GRPC_", "MALLOC_")

FAMILY_ID = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
RESOURCE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
ENV_VAR = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
DNS_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
LABEL_PREFIX = re.compile(rf"^{DNS_LABEL}(\.{DNS_LABEL})+$")
CONTACT = re.compile(r"^(https?://[^\s/]+(/\S*)?|[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+)$")
#: Answers that may hold a '/' (a URL, an e-mail's display name); every other answer refuses '/' and '\'.
MAY_HOLD_SLASH = ("maintainers", "support_contact", "label_prefix", "kubernetes_resource")
#: Scheduler names, as the SDK's rayaccel.records.SchedulerNames checks them.
QUALIFIED_NAME_PART = re.compile(r"^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
DRA_DRIVER = re.compile(rf"^(?=.{{1,63}}$){DNS_LABEL}(\.{DNS_LABEL})+$")
SLURM_GRES = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")


def _template_dir() -> Path:
    """The template being rendered: cookiecutter and cruft append its folder to sys.path (that is how they
    load this module), so the last such entry holding this module is it; else this file's folder."""
    for entry in reversed(sys.path):
        folder = Path(entry or ".")
        if (folder / "cookiecutter.json").is_file() and (folder / MODULE_FILE).is_file():
            return folder.resolve()
    return Path(__file__).resolve().parent


def questions(template: Path | None = None) -> dict[str, Any]:
    """cookiecutter.json as written (the questions, their defaults, the hidden variables)."""
    data: dict[str, Any] = json.loads(((template or _template_dir()) / "cookiecutter.json").read_text("utf-8"))
    return data


def delimiters(env_vars: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    extra = tuple(str(v) for k, v in (env_vars or {}).items() if k in DELIMITER_KEYS and v)
    return DEFAULT_DELIMITERS + extra


def syntax_in(value: str, env_vars: Mapping[str, Any] | None = None) -> str | None:
    """The first template delimiter in ``value``, or None."""
    return next((d for d in delimiters(env_vars) if d in value), None)


def escapes(value: str) -> bool:
    """True for a value that, used as a path, would leave the folder it is joined to."""
    parts = re.split(r"[/\\]", value)
    return value.startswith(("/", "\\", "~")) or ".." in parts or bool(re.match(r"^[A-Za-z]:", value))


def answer_problem(key: str, value: object, env_vars: Mapping[str, Any] | None = None) -> str | None:
    """What is wrong with one answer on its own (template syntax, control characters, path separators)."""
    if key.startswith("_"):
        return (f"{key} is a hidden variable the template derives from the answers; it cannot be set "
                "(answer the questions instead)")
    if not isinstance(value, str):
        return None
    found = syntax_in(value, env_vars)
    if found is not None:
        return (f"{key} contains template syntax ({found!r}); answers are data, never rendered: give it without "
                "'{{', '{%' or '{#'")
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")), None)
    if bad is not None:
        return (f"{key} contains the control character U+{ord(bad):04X}; answers are one line of text, "
                "give it again without it")
    if key not in MAY_HOLD_SLASH and ("/" in value or "\\" in value):
        sep = "/" if "/" in value else "\\"
        return f"{key} contains the path separator {sep!r}; give it without one"
    return None


def _sdk_families() -> dict[str, tuple[str, str]]:
    try:
        from rayaccel import RAY_BUILTIN_FAMILIES
    except ImportError:
        return {}
    return {name: (res, env) for name, (res, env) in RAY_BUILTIN_FAMILIES.items() if env}


def _owners() -> list[tuple[str, str, str]]:
    """(who, resource, env var) for every family a new plugin must not collide with."""
    owners = [(f"Ray's built-in {who} support", res, env) for who, (res, env) in RAY_FAMILIES.items()]
    owners += [(f"Ray's {who}", res, env) for who, (res, env) in _sdk_families().items()]
    owners += [(f"the rayaccel reference plugin {name!r}", res, env) for name, (res, env) in REFERENCE_PLUGINS.items()]
    return owners


def env_var_problem(env_var: str) -> str | None:
    """Why ``env_var`` cannot be a family's visible-devices variable (the SDK's rule, repeated here)."""
    if env_var in DENIED_ENV_VARS or env_var.startswith(DENIED_ENV_PREFIXES):
        return (f"visible-devices env var {env_var} is a well-known process, runtime or other vendor's variable "
                "(PATH, LD_*, PYTHON*, RAY_*, OMP_*, CUDA_VISIBLE_DEVICES, ...); setting it per task would break "
                "the worker; choose your own, e.g. ACME_VISIBLE_DEVICES")
    return None


def derived(answers: Mapping[str, Any], template: Path | None = None) -> dict[str, Any]:
    """The hidden variables as the template derives them from the visible answers."""
    from cookiecutter.environment import StrictEnvironment
    from cookiecutter.prompt import render_variable

    spec = questions(template)
    context: dict[str, Any] = {}
    # Without _extensions (this module may be loaded under another name), sandboxed by hand.
    env = StrictEnvironment(context={"cookiecutter": {}}, **spec.get("_jinja2_env_vars", {}))
    sandbox(env)
    for key, raw in spec.items():
        if key.startswith("__") and not isinstance(raw, dict):
            context[key] = render_variable(env, raw, context)
        elif not key.startswith("_"):
            context[key] = answers[key] if key in answers else (
                render_variable(env, raw[0] if isinstance(raw, list) else raw, context))
    return context


def problem(answers: Mapping[str, Any], template: Path | None = None) -> tuple[str, str] | None:
    """The first thing wrong with a full set of answers as (question, one sentence with the fix)."""
    spec = questions(template)
    env_vars = spec.get("_jinja2_env_vars") or {}
    for key, value in answers.items():
        if key.startswith("_") or key not in spec:
            continue
        message = answer_problem(key, value, env_vars)
        if message:
            return key, message
    expected = derived({k: v for k, v in answers.items() if not k.startswith("_")}, template)
    for key, value in expected.items():
        if key.startswith("__") and key in answers and answers[key] != value:
            return key, (f"hidden variable {key} was set to {answers[key]!r}; the template derives it "
                         f"({value!r}) from the answers and it cannot be set")
    return _answers_problem({**expected, **{k: v for k, v in answers.items() if not k.startswith("__")}})


def _answers_problem(answers: Mapping[str, Any]) -> tuple[str, str] | None:
    if not str(answers["vendor_name"]).strip():
        return "vendor_name", "vendor_name is empty; give your company's name, e.g. vendor_name='ACME Corp'"
    family_name = str(answers["family_name"])
    family = str(answers["__family"])
    if not family:
        return "family_name", (f"family name {family_name!r} gives an empty plugin id (it has no letters or "
                               "digits); answer family_name=<a name with letters, e.g. acme>")
    if not FAMILY_ID.match(family):
        why = "it must start with a letter" if not family[0].isalpha() else "it must be at most 32 characters"
        return "family_name", (f"family name {family_name!r} gives plugin id {family!r}, which is not a valid "
                               f"identifier: {why}; answer family_name=<a name starting with a letter> (its "
                               "default is the vendor name's first word)")
    module = str(answers["__module"])
    if not module.isidentifier() or keyword.iskeyword(module):
        return "family_name", (f"family name {family_name!r} gives module name {module!r}, which is not a "
                               "Python identifier")
    if family in RESERVED_IDS:
        return "family_name", (f"plugin id {family!r} is taken by a rayaccel package (rayaccel-{family}); "
                               "choose a family name of your own")
    resource = str(answers["resource_name"])
    if not RESOURCE.match(resource):
        return "resource_name", (f"resource name {resource!r} is not valid: it must start with a letter and hold "
                                 "only letters, digits and '_' (at most 63), e.g. ACME")
    if resource in RAY_RESERVED or resource.startswith(RAY_RESERVED_PREFIXES):
        return "resource_name", (f"resource name {resource!r} is reserved by Ray itself; choose your own, "
                                 f"e.g. {family.upper()}")
    env_var = str(answers["visible_devices_env_var"])
    if not ENV_VAR.match(env_var):
        return "visible_devices_env_var", (f"visible-devices env var {env_var!r} is not valid: upper-case letters, "
                                           "digits and '_', starting with a letter, e.g. ACME_VISIBLE_DEVICES")
    for who, res, env in _owners():
        if resource.lower() == res.lower():
            return "resource_name", (f"resource name {resource!r} collides with {res!r} of {who}; a new family "
                                     f"needs its own resource name, e.g. "
                                     f"resource_name={family.upper().replace('-', '_')}")
        if env_var == env:
            return "visible_devices_env_var", (
                f"visible-devices env var {env_var} is already used by {who}; a new family needs its own, "
                f"e.g. visible_devices_env_var={family.upper().replace('-', '_')}_VISIBLE_DEVICES")
    denied = env_var_problem(env_var)
    if denied:
        return "visible_devices_env_var", denied
    prefix = str(answers["__label_prefix"])
    if prefix == "ray.io" or prefix.endswith(".ray.io"):
        return "label_prefix", (f"label prefix {prefix!r} is Ray's reserved ray.io/ prefix; use your own domain, "
                                f"e.g. label_prefix={family}.example.com")
    if prefix == "rayaccel.io" or prefix.endswith(".rayaccel.io"):
        return "label_prefix", (f"label prefix {prefix!r} is the SDK's own rayaccel.io/ vocabulary; use your own "
                                f"domain, e.g. label_prefix={family}.example.com")
    if len(prefix) > 253 or not LABEL_PREFIX.match(prefix):
        return "label_prefix", (f"label prefix {prefix!r} is not a DNS name (lower-case labels joined by dots, "
                                f"like acme.com); e.g. label_prefix={family}.example.com")
    contact = str(answers.get("support_contact", "")).strip()
    if "support_contact" in answers and not CONTACT.match(contact):
        return "support_contact", (f"support contact {contact!r} is not a URL (https://...) or an e-mail address; "
                                   "e.g. support_contact=https://acme.example.com/support")
    return _scheduler_names_problem(answers, family, prefix)


def _scheduler_names_problem(answers: Mapping[str, Any], family: str, prefix: str) -> tuple[str, str] | None:
    """The names cluster schedulers give the devices (rayaccel.records.SchedulerNames' rules)."""
    resource = str(answers.get("kubernetes_resource", f"{prefix}/{family}"))
    domain, slash, part = resource.partition("/")
    if (not slash or len(domain) > 253 or not LABEL_PREFIX.match(domain) or domain == "kubernetes.io"
            or domain.endswith(".kubernetes.io") or not QUALIFIED_NAME_PART.match(part)):
        return "kubernetes_resource", (f"Kubernetes resource name {resource!r} is not an extended resource name "
                                       "(your DNS domain, '/', a name of at most 63 letters, digits, '-', '_', '.'; "
                                       f"not kubernetes.io); e.g. kubernetes_resource={family}.example.com/accel")
    driver = str(answers.get("dra_driver", prefix))
    if not DRA_DRIVER.match(driver):
        return "dra_driver", (f"DRA driver name {driver!r} is not a DNS name of at most 63 characters with a dot "
                              f"(lower-case labels joined by dots); e.g. dra_driver=accel.{family}.example.com")
    gres = str(answers.get("slurm_gres", family.replace("-", "_")))
    if not SLURM_GRES.match(gres):
        return "slurm_gres", (f"Slurm GRES name {gres!r} is not valid: letters, digits and '_', starting with a "
                              "letter; e.g. slurm_gres=gpu")
    return None


def notes(answers: Mapping[str, Any]) -> list[str]:
    """What the answers leave for a higher tier (printed, not refused)."""
    maintainers = {m.strip() for m in str(answers.get("maintainers", "")).split(",") if m.strip()}
    if len(maintainers) < 2:
        return ["the certified tier (RAC302) needs at least two maintainers; add a second to MAINTAINERS in "
                "plugin.py when you go for certified (the simulated CI job stops at supported)"]
    return []


# The sandboxed rendering -----------------------------------------------------------------------------------


def _trusted_sources(template: Path) -> tuple[set[str], list[str]]:
    """Every string the template itself asks Jinja to render from a string: cookiecutter.json's values,
    the hooks' text, and its file and folder names (cookiecutter renders those joined to the output path)."""
    strings: set[str] = set()

    def collect(value: object) -> None:
        if isinstance(value, str):
            strings.add(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                collect(k)
                collect(v)
        elif isinstance(value, list):
            for v in value:
                collect(v)

    collect(questions(template))
    hooks = template / "hooks"
    for hook in hooks.iterdir() if hooks.is_dir() else []:
        if hook.is_file():
            strings.add(hook.read_text(encoding="utf-8"))
    paths: list[str] = []
    for root in (p for p in template.iterdir() if p.is_dir() and "{{" in p.name):
        strings.add(root.name)
        for path in root.rglob("*"):
            relative = path.relative_to(root)
            paths.append(str(relative))
            paths.append("/" + str(relative))
    return strings, paths


def sandbox(environment: Environment) -> None:
    """Make ``environment`` a SandboxedEnvironment in place (cookiecutter creates it; the extension only
    gets it): attribute access, calls and operators then go through Jinja's sandbox checks."""
    if isinstance(environment, SandboxedEnvironment):
        return
    environment.__class__ = type(f"Sandboxed{type(environment).__name__}",
                                 (SandboxedEnvironment, type(environment)), {})
    sandboxed: Any = environment
    sandboxed.globals["range"] = __import__("jinja2.sandbox", fromlist=["safe_range"]).safe_range
    sandboxed.binop_table = SandboxedEnvironment.default_binop_table.copy()
    sandboxed.unop_table = SandboxedEnvironment.default_unop_table.copy()


class SandboxExtension(Extension):
    """Listed in cookiecutter.json's ``_extensions``: sandboxes rendering and refuses answers that are
    templates or paths out of the output folder (see the module docstring)."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        sandbox(environment)
        self._template = _template_dir()
        self._strings, self._paths = _trusted_sources(self._template)
        environment.globals["rayaccel_answer_problem"] = self.hook_problem

    def _trusted(self, source: str) -> bool:
        if source in self._strings:
            return True
        normalized = source.replace("\\", "/")
        return any(normalized.endswith(path) for path in self._paths)

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        if name is not None or filename is not None or self._trusted(source):
            return source  # a file of the template, loaded by name
        found = syntax_in(source, {key: getattr(self.environment, key, None) for key in DELIMITER_KEYS})
        if found is not None:
            raise UndefinedError(f"an answer contains template syntax ({found!r}); answers are data and are never "
                                 "rendered: give it without '{{', '{%' or '{#'")
        if escapes(source):
            raise UndefinedError(f"an answer ({source!r}) is a path out of the output folder; hidden variables "
                                 "cannot be set and answers hold no path")
        return source

    def hook_problem(self, context: Mapping[str, Any]) -> str:
        """For the pre-generation hook: the first problem as one line, or ''."""
        found = problem(dict(context), self._template)
        return found[1] if found else ""
