"""The cloud node types the installed plugins hint at: what an autoscaler needs before a node exists.

``rayaccel_cloud_hints`` answers for one instance type at a time, so the catalog asks it about the instance
types an operator names, those each plugin lists (``rayaccel_cloud_instance_types``) and those the
recordings it is given are of (an EC2 machine's DMI product name is its instance type): whoever calls it chooses
them (``rayaccel export`` passes the installed plugins' fixtures as simulated hosts; this layer knows no fixture).
Where a fixture of the same family records that instance type, its inventory is what a real node of the
type publishes: its labels become the node type's, and a hint whose count disagrees with what the fixture
discovers is a problem, since the autoscaler would launch a node for work it cannot take (or leave
capacity unused). The hooks are called through the manager it is given (``rayaccel export`` gives one whose
plugins answer from their worker processes, and builds the fixtures' families there: ``family_of``); the
autoscaler format only renders the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pydantic import Field

from rayaccel import hookspec
from rayaccel.errors import RayaccelError
from rayaccel.hosts.seam import Host
from rayaccel.inventory.builder import InventoryBuilder, family_identity_labels
from rayaccel.labels import label_errors, node_own_label
from rayaccel.plugins.manager import PluginManager
from rayaccel.records import CloudHint, FamilyInventory, Problem, Record

PROVIDERS = ("aws", "gcp", "azure", "oci", "other")

_EC2_VENDOR = "/sys/devices/virtual/dmi/id/sys_vendor"
_EC2_PRODUCT = "/sys/devices/virtual/dmi/id/product_name"


class CloudNodeType(Record):
    """One instance type with one family's accelerators, as an autoscaler must know it before launch."""

    provider: str
    instance_type: str
    plugin: str
    family: str
    resources: dict[str, float]
    labels: dict[str, str]
    fixture: str | None = Field(None, description="The fixture (plugin/name) recorded on this instance type, "
                                                  "whose inventory gave the labels")


class CloudCatalog(Record):
    node_types: list[CloudNodeType]
    problems: list[Problem] = Field(default_factory=list)


def parse_instance_type(text: str) -> tuple[str, str]:
    """``aws:p5.48xlarge`` -> (``aws``, ``p5.48xlarge``); bad input is one line naming the form."""
    provider, sep, instance_type = text.partition(":")
    if not sep or provider not in PROVIDERS or not instance_type.strip():
        raise RayaccelError(f"instance type {text!r} is not PROVIDER:TYPE: give e.g. aws:p5.48xlarge or "
                            f"gcp:ct5p-hightpu-4t (providers: {', '.join(PROVIDERS)})")
    return provider, instance_type.strip()


def cloud_identity(host: Host) -> tuple[str, str] | None:
    """The (provider, instance type) a machine says it is, from what it shows without a network call: an
    EC2 instance's DMI names its type. None when the machine does not say."""
    try:
        vendor = host.read_text(_EC2_VENDOR).strip()
        product = host.read_text(_EC2_PRODUCT).strip()
    except (FileNotFoundError, IsADirectoryError):
        return None
    return ("aws", product) if vendor == "Amazon EC2" and product else None


#: How one plugin's family on a host is built: (plugin, host, problems) -> the family, or None (no devices).
FamilyOf = Callable[[str, Host, list[Problem]], FamilyInventory | None]


def collect_cloud_catalog(manager: PluginManager, instance_types: Sequence[tuple[str, str]] = (),
                          plugins: Sequence[str] | None = None, family_of: FamilyOf | None = None, *,
                          recordings: Iterable[tuple[str, Host]]) -> CloudCatalog:
    """Ask every active plugin (or those named) about ``instance_types`` and about the instance types its
    ``recordings`` (fixture ref ``plugin/name`` -> the host it records) are of; check each hint against the
    recording of the same family and type. ``family_of``: how a recording's family is built (default: here,
    with the manager's hooks)."""
    names = list(plugins) if plugins else manager.plugin_names()
    if family_of is None:
        builder = InventoryBuilder(manager, names)

        def family_of(plugin: str, host: Host, problems: list[Problem]) -> FamilyInventory | None:
            return builder.family(plugin, host, problems, with_metrics=False)
    problems: list[Problem] = []
    # Every fixture of an instance type: one type may be recorded in several runtime configurations (a
    # Trainium2 at logical-core config 2, its default, and at 1), each a machine that type can be.
    recorded: dict[tuple[str, str, str], list[tuple[str, FamilyInventory]]] = {}
    for ref, host in recordings:
        plugin = ref.split("/", 1)[0]
        if plugin not in names:
            continue
        identity = cloud_identity(host)
        if identity is None:
            continue
        found = family_of(plugin, host, problems)
        if found is not None:
            recorded.setdefault((plugin, *identity), []).append((ref, found))
    listed = {plugin: manager.answer(plugin, hookspec.CLOUD_INSTANCE_TYPES, problems) for plugin in names}
    asked = list(dict.fromkeys([*instance_types, *((h.provider, h.instance_type) for hints in listed.values()
                                                   for h in hints), *((p, t) for (_, p, t) in recorded)]))
    node_types: list[CloudNodeType] = []
    for provider, instance_type in asked:
        for plugin in names:
            hint = manager.answer(plugin, hookspec.CLOUD_HINTS, problems, provider=provider,
                                  instance_type=instance_type)
            same = [h for h in listed[plugin] if (h.provider, h.instance_type) == (provider, instance_type)]
            if same and same[0] != hint:
                problems.append(Problem(
                    plugin=plugin, distribution=manager.plugin(plugin).distribution,
                    hook="rayaccel_cloud_instance_types", code="cloud-hints-differ",
                    message=f"{provider}:{instance_type} is listed as {same[0].count:g} of type "
                            f"{same[0].accelerator_type}, but rayaccel_cloud_hints answers {hint!r} for it; "
                            "the listed hint is left out",
                    fix="build both hooks' answers from the same instance-type table"))
            if hint is None:
                continue
            # A name the plugin lists under other providers only is theirs: the same name here is no machine it
            # knows (gcp:p5.48xlarge), whatever its hint says.
            elsewhere = sorted({h.provider for h in listed[plugin]
                                if h.instance_type.strip().lower() == instance_type.strip().lower()})
            if elsewhere and provider not in elsewhere:
                problems.append(Problem(
                    plugin=plugin, distribution=manager.plugin(plugin).distribution, hook="rayaccel_cloud_hints",
                    code="hint-for-another-provider",
                    message=f"{provider}:{instance_type} is hinted as {hint.count:g} of type {hint.accelerator_type}, "
                            f"but the plugin lists {instance_type} under {', '.join(elsewhere)} only: the node type "
                            "is left out",
                    fix="look instance types up under the provider asked, and give no hint for a provider that "
                        "does not list the name"))
                continue
            node_types.append(_node_type(manager, plugin, hint, recorded.get((plugin, provider, instance_type), []),
                                         problems))
    return CloudCatalog(node_types=node_types, problems=problems)


def _node_type(manager: PluginManager, plugin: str, hint: CloudHint,
               recorded: list[tuple[str, FamilyInventory]], problems: list[Problem]) -> CloudNodeType:
    declaration = manager.family(plugin)

    def hint_problem(code: str, message: str, fix: str) -> None:
        problems.append(Problem(plugin=plugin, distribution=manager.plugin(plugin).distribution,
                                hook="rayaccel_cloud_hints", code=code, message=message, fix=fix))

    resources = {declaration.resource_name: float(hint.count)}
    if hint.accelerator_type:
        resources[f"accelerator_type:{hint.accelerator_type}"] = 1.0
    resources.update(hint.extra_resources)
    labels = family_identity_labels(declaration, hint.accelerator_type)
    ref = None
    if recorded:
        # The hint describes the type as launched (its default configuration): it must agree with one of the
        # type's recordings, whose labels the node type then carries.
        ref, family = next(((r, f) for r, f in recorded if _agrees(hint, declaration.resource_name, f)), recorded[0])
        labels = {k: v for k, v in family.labels.items() if not node_own_label(k)}
        discovered = family.resources.get(declaration.resource_name, 0.0)
        if not _agrees(hint, declaration.resource_name, family):
            hint_problem(
                "cloud-hint-disagrees",
                f"{hint.provider}:{hint.instance_type} is hinted as {hint.count:g} "
                f"{declaration.resource_name} of type {hint.accelerator_type or '(none)'}, but fixture {ref} "
                f"of that instance type discovers {discovered:g} of type {family.accelerator_type or '(none)'}"
                "; an autoscaler would launch it for work it cannot take, or never for work asking its type",
                "correct the plugin's instance-type table (or the fixture, if the recording is wrong)")
    elif hint.accelerator_type is None and (types := _catalog_types(manager, plugin)):
        # Discovery gives a node the type of the SKU its devices match (the builder's _accelerator_type), none
        # only where the plugin says so: the node type would lack the accelerator_type resource the node publishes.
        hint_problem(
            "cloud-hint-untyped",
            f"{hint.provider}:{hint.instance_type} is hinted as {hint.count:g} {declaration.resource_name} "
            f"without an accelerator type, while a node of the family publishes its SKU's "
            f"({', '.join(sorted(types))}): the node type lacks accelerator_type:<type>, so a task asking "
            "for the type never starts it from zero",
            "give the hint the accelerator type discovery gives on that instance type")
    for why in label_errors(labels):  # a hint's accelerator type becomes a label value: Ray must take it
        hint_problem("invalid-label", f"{hint.provider}:{hint.instance_type}: {why}; the label is left out",
                     "give the hint the accelerator type discovery gives (a valid label value)")
    labels = {k: v for k, v in labels.items() if not label_errors({k: v})}
    return CloudNodeType(provider=hint.provider, instance_type=hint.instance_type, plugin=plugin,
                         family=declaration.name, resources=resources, labels=labels, fixture=ref)


def _agrees(hint: CloudHint, resource_name: str, family: FamilyInventory) -> bool:
    """Whether a recording of the hinted instance type offers what the hint says: the count and the type (a hint
    without one agrees only with a node that publishes none: the node type has no accelerator_type resource)."""
    same_type = (hint.accelerator_type or None) == (family.accelerator_type or None)
    return family.resources.get(resource_name, 0.0) == hint.count and same_type


def _catalog_types(manager: PluginManager, plugin: str) -> set[str]:
    """The accelerator types of the plugin's SKU catalog (none where it has none, or its hook fails)."""
    catalog = manager.answer(plugin, hookspec.SKU_CATALOG, [])
    return {sku.accelerator_type for sku in catalog.skus} if catalog else set()
