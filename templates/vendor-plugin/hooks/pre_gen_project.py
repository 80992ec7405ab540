"""Check the answers before anything is written; on a bad answer print one line and exit 1.

Cookiecutter removes the half-made project folder when this hook fails, so a refused answer leaves
nothing behind. The answers reach this script as one JSON document (rendered with ``tojson`` twice, so
quotes, backslashes and non-ASCII letters stay data); nothing in them is ever executed.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
import unicodedata

ANSWERS = json.loads({{ cookiecutter | tojson | tojson }})

#: Ray 2.60's built-in accelerator families: (resource name, visible-devices env var). The SDK's
#: rayaccel.raycompat holds the same table; when it is importable its entries are used too.
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

FAMILY_ID = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
RESOURCE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
ENV_VAR = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
DNS_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
LABEL_PREFIX = re.compile(rf"^{DNS_LABEL}(\.{DNS_LABEL})+$")
TEXT_ANSWERS = ("vendor_name", "family_name", "resource_name", "visible_devices_env_var", "maintainers",
                "label_prefix")


def _sdk_families() -> dict[str, tuple[str, str]]:
    try:
        from rayaccel.raycompat import RAY_BUILTIN_FAMILIES
    except ImportError:
        return {}
    return {name: (res, env) for name, (res, env) in RAY_BUILTIN_FAMILIES.items() if env}


def _owners() -> list[tuple[str, str, str]]:
    """(who, resource, env var) for every family a new plugin must not collide with."""
    owners = [(f"Ray's built-in {who} support", res, env) for who, (res, env) in RAY_FAMILIES.items()]
    owners += [(f"Ray's {who}", res, env) for who, (res, env) in _sdk_families().items()]
    owners += [(f"the rayaccel reference plugin {name!r}", res, env) for name, (res, env) in REFERENCE_PLUGINS.items()]
    return owners


def problem(answers: dict[str, object]) -> str | None:
    """The first thing wrong with the answers, as one sentence with the fix; None when they are fine."""
    for key in TEXT_ANSWERS:
        value = str(answers.get(key, ""))
        bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")), None)
        if bad is not None:
            return (f"{key} contains the control character U+{ord(bad):04X}; answers are one line of text, "
                    "give it again without it")
    if not str(answers["vendor_name"]).strip():
        return "vendor_name is empty; give your company's name, e.g. vendor_name='ACME Corp'"

    family_name = str(answers["family_name"])
    family = str(answers["__family"])
    if not family:
        return (f"family name {family_name!r} gives an empty plugin id (it has no letters or digits); "
                "answer family_name=<a name with letters, e.g. acme>")
    if not FAMILY_ID.match(family):
        why = "it must start with a letter" if not family[0].isalpha() else "it must be at most 32 characters"
        return (f"family name {family_name!r} gives plugin id {family!r}, which is not a valid identifier: {why}; "
                "answer family_name=<a name starting with a letter> (its default is the vendor name's first word)")
    module = str(answers["__module"])
    if not module.isidentifier() or keyword.iskeyword(module):
        return f"family name {family_name!r} gives module name {module!r}, which is not a Python identifier"
    if family in RESERVED_IDS:
        return (f"plugin id {family!r} is taken by a rayaccel package (rayaccel-{family}); "
                "choose a family name of your own")

    resource = str(answers["resource_name"])
    if not RESOURCE.match(resource):
        return (f"resource name {resource!r} is not valid: it must start with a letter and hold only letters, "
                "digits and '_' (at most 63), e.g. ACME")
    if resource in RAY_RESERVED or resource.startswith(RAY_RESERVED_PREFIXES):
        return f"resource name {resource!r} is reserved by Ray itself; choose your own, e.g. {family.upper()}"
    env_var = str(answers["visible_devices_env_var"])
    if not ENV_VAR.match(env_var):
        return (f"visible-devices env var {env_var!r} is not valid: upper-case letters, digits and '_', "
                "starting with a letter, e.g. ACME_VISIBLE_DEVICES")
    for who, res, env in _owners():
        if resource.lower() == res.lower():
            return (f"resource name {resource!r} collides with {res!r} of {who}; a new family needs its own "
                    f"resource name, e.g. resource_name={family.upper().replace('-', '_')}")
        if env_var == env:
            return (f"visible-devices env var {env_var} is already used by {who}; a new family needs its own, "
                    f"e.g. visible_devices_env_var={family.upper().replace('-', '_')}_VISIBLE_DEVICES")

    prefix = str(answers["__label_prefix"])
    if prefix == "ray.io" or prefix.endswith(".ray.io"):
        return (f"label prefix {prefix!r} is Ray's reserved ray.io/ prefix; use your own domain, "
                f"e.g. label_prefix={family}.example.com")
    if prefix == "rayaccel.io" or prefix.endswith(".rayaccel.io"):
        return (f"label prefix {prefix!r} is the SDK's own rayaccel.io/ vocabulary; use your own domain, "
                f"e.g. label_prefix={family}.example.com")
    if len(prefix) > 253 or not LABEL_PREFIX.match(prefix):
        return (f"label prefix {prefix!r} is not a DNS name (lower-case labels joined by dots, like acme.com); "
                f"e.g. label_prefix={family}.example.com")
    return None


def main() -> int:
    message = problem(ANSWERS)
    if message:
        print(f"error: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
