"""Build a node's inventory: host -> plugins -> validated records -> one NodeInventory.

This is the only place hooks are called in sequence for a node. Everything downstream (the Ray bridge,
the health monitor, exporters, conformance) consumes the NodeInventory and never probes on its own.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rayaccel import hookspec
from rayaccel.catalog import derive_accelerator_type, resolve_sku, sku_add_command, sku_disagreement
from rayaccel.hosts.seam import Host
from rayaccel.inventory.health_decisions import HealthDecisions, decisions_from_env
from rayaccel.inventory.topology import best_link_kind, order_units, topology_errors
from rayaccel.labels import (
    GPU_DOMAIN_KINDS,
    LINK_PREFERENCE,
    VOCABULARY_PREFIX,
    domain_label_value,
    label_errors,
    to_label_value,
)
from rayaccel.plugins.manager import PluginManager, default_manager
from rayaccel.records import (
    HEALTH_ORDER,
    ID_FALLBACK,
    Device,
    FamilyDeclaration,
    FamilyInventory,
    HealthDecision,
    HealthReport,
    IdleFamily,
    NodeInventory,
    Problem,
    SkuCatalog,
    SkuRecord,
    Topology,
    WorkerNeeds,
    partition_resource_name,
)
from rayaccel.support.raycompat import RAY_ACCELERATOR_TYPE_LABEL, RAY_GPU_DOMAIN_LABEL, RAY_LABEL_PREFIX
from rayaccel.vocabulary import named_link_kind


@dataclass(frozen=True)
class _Refreshed:
    """The last family :meth:`InventoryBuilder.refresh` built whole, with what it was built from."""

    family: FamilyInventory
    discovered: list[Device]
    problems: list[Problem]  # of the hooks a refresh does not ask again
    at: float


#: Seconds a family :meth:`InventoryBuilder.refresh` keeps is trusted at most: then it is built whole again (a
#: link that went down without any device's health changing shows in the topology within this bound).
REFRESH_FULL_S = 30.0
#: The hooks :meth:`InventoryBuilder.refresh` asks on every poll; the problems of the others are kept.
_POLLED_HOOKS = (hookspec.DISCOVER.name, hookspec.HEALTH.name, hookspec.METRICS.name)


def _nothing_offered(plugin: str, resource_name: str, devices: Sequence[Device],
                     health: Sequence[HealthReport]) -> Problem:
    """Why a family that found devices offers none of them: a node that says ``TPU: 0`` says why."""
    reasons = Counter(next((r.code for r in h.reasons), "no reason given") for h in health if h.state == "unhealthy")
    if reasons:
        why = "unhealthy: " + ", ".join(f"{code} on {n}" for code, n in sorted(reasons.items()))
    else:
        why = "every device is partitioned and no partition takes work"
    return Problem(plugin=plugin, code="nothing-offered", severity="error",
                   message=f"found {len(devices)} device(s) but offers no {resource_name} ({why})",
                   fix="rayaccel inspect shows each device's health and reasons; fix the devices, or the plugin if "
                       "the reason is wrong for this machine")


class InventoryBuilder:
    """Runs the hooks of every active plugin against one host."""

    def __init__(self, manager: PluginManager, plugins: Sequence[str] | None = None) -> None:
        self.manager = manager
        self.plugins = list(plugins) if plugins is not None else manager.plugin_names()
        self._catalogs: dict[str, SkuCatalog | None] = {}
        self._refreshed: dict[str, _Refreshed] = {}
        #: The operator's health policy (RAYACCEL_HEALTH_POLICY), applied to every family's health reports.
        self.health_decisions: HealthDecisions | None = decisions_from_env()
        self._decisions: dict[str, list[HealthDecision]] = {}  # plugin -> what the policy did, last _health

    def catalog(self, plugin: str, problems: list[Problem]) -> SkuCatalog | None:
        if plugin not in self._catalogs:
            self._catalogs[plugin] = self.manager.answer(plugin, hookspec.SKU_CATALOG, problems)
        return self._catalogs[plugin]

    def build(self, host: Host, with_metrics: bool = True) -> NodeInventory:
        problems: list[Problem] = list(self.manager.problems)
        with self.manager.deadline():  # one bound for the whole inventory, not only per hook
            found = {plugin: self.family(plugin, host, problems, with_metrics) for plugin in self.plugins}
        return self.node(host, found, problems)

    def node(self, host: Host, found: Mapping[str, FamilyInventory | None], problems: list[Problem],
             idle_workers: Mapping[str, WorkerNeeds] | None = None) -> NodeInventory:
        """The node's inventory from each plugin's family (None: no devices, or its call failed).
        ``idle_workers``: what an idle plugin's workers need, where its hooks ran in another process."""
        families = [family for family in found.values() if family is not None]
        idle_workers = idle_workers or {}
        idle = [IdleFamily(plugin=plugin, family=self.manager.family(plugin),
                           worker=idle_workers.get(plugin) or self.worker_needs(plugin, []))
                for plugin, family in found.items() if family is None]
        # A simulated host's own trouble (an unreadable fault file) is the node's, said once, not each plugin's.
        host_problems: Callable[[], list[Problem]] | None = getattr(host, "fault_file_problems", None)
        problems = [*problems, *(host_problems() if host_problems is not None else [])]
        return NodeInventory(host=host.name, simulated=host.simulated, families=families,
                             resources=self._node_resources(families, problems),
                             labels=self._node_labels(families, problems), problems=problems, idle=idle)

    # One family ---------------------------------------------------------------------------------

    def refresh(self, plugin: str, host: Host, problems: list[Problem],
                with_metrics: bool = True) -> tuple[FamilyInventory | None, bool]:
        """The family again, for a poll that repeats the previous one (the health monitor's): discovery and
        health are asked, and when both answer exactly what they answered when this built the family last,
        the rest of that family (SKUs, topology, resources, labels: what follows from the devices and their
        health) is kept and only the metrics are sampled again. Anything else, and a kept family older than
        :data:`REFRESH_FULL_S`, builds the whole family as :meth:`family` does. Returns the family and whether it
        was kept (only its metrics new)."""
        last = self._refreshed.get(plugin)
        asked: list[Problem] = []
        devices = self._devices(plugin, host, asked)
        if last is not None and time.monotonic() - last.at < REFRESH_FULL_S and devices == last.discovered:
            health = self._health(plugin, host, list(last.family.devices), asked)
            if health == last.family.health:
                metrics = (self.manager.answer(plugin, hookspec.METRICS, asked, host=host,
                                               devices=list(last.family.devices)) if with_metrics else [])
                problems.extend([*last.problems, *asked])
                decisions = self._decisions.pop(plugin, [])
                return last.family.model_copy(update={"metrics": metrics, "decisions": decisions}), True
        start = len(problems)
        family = self.family(plugin, host, problems, with_metrics, discovered=devices, discover_problems=asked)
        self._refreshed.pop(plugin, None)
        if family is not None:
            kept = [p for p in problems[start:] if p.hook not in _POLLED_HOOKS]
            self._refreshed[plugin] = _Refreshed(family, devices, kept, time.monotonic())
        return family, False

    def family(self, plugin: str, host: Host, problems: list[Problem],
               with_metrics: bool = True, *, discovered: list[Device] | None = None,
               discover_problems: Sequence[Problem] = ()) -> FamilyInventory | None:
        """``discovered``: the plugin's devices as :meth:`refresh` just asked them (with the problems of that call)."""
        declaration = self.manager.family(plugin)
        if discovered is None:
            devices = self._devices(plugin, host, problems)
        else:
            devices = discovered
            problems.extend(discover_problems)
        if not devices:
            return None
        catalog = self.catalog(plugin, problems)
        self._check_sku_agreement(plugin, catalog, devices, problems)
        devices, skus = self._resolve_skus(plugin, catalog, devices)
        topology = self._topology(plugin, host, devices, problems)
        health = self._health(plugin, host, devices, problems)
        decisions = self._decisions.pop(plugin, [])
        states = {h.device: h.state for h in health}
        healthy = [d for d in devices if states.get(d.id, "unknown") != "unhealthy"]
        contribution = self.manager.answer(plugin, hookspec.RESOURCES, problems, host=host,
                                           devices=list(healthy), topology=topology)
        partition_units, refused = schedulable_partitions(declaration.resource_name, healthy, states)
        problems.extend(self._problem(plugin, hookspec.DISCOVER.name, "partition-name-collision",
                                      refusal, "name partition kinds and profiles so that no two pairs spell "
                                      "the same Ray resource or label")
                        for refusal in refused)

        known = [s for s in skus if s is not None]
        sku_known = len(known) == len(devices)
        accelerator_type = self._accelerator_type(plugin, devices, skus, contribution.accelerator_type, problems,
                                                  contribution.no_accelerator_type, catalog)
        # A partitioned device is offered only as its partitions (each profile its own resource), never whole.
        units = order_units([d for d in healthy if not d.partitioned], topology)
        resources: dict[str, float] = {}
        if units:
            resources[declaration.resource_name] = float(len(units))
        resources.update({name: float(len(ids)) for name, ids in partition_units.items()})
        if not resources:
            problems.append(_nothing_offered(plugin, declaration.resource_name, devices, health))
        if resources:
            if accelerator_type is not None:
                resources[f"accelerator_type:{accelerator_type}"] = 1.0
            resources.update(contribution.extra)

        partial = FamilyInventory(family=declaration, plugin=plugin, devices=devices, topology=topology,
                                  health=health, accelerator_type=accelerator_type, sku_known=sku_known,
                                  resources=resources, schedulable_units=units, labels={},
                                  worker=self.worker_needs(plugin, units, problems), partition_units=partition_units,
                                  decisions=decisions)
        labels = self._vocabulary_labels(declaration, partial, known, healthy)
        problems.extend(self._interconnect_problems(plugin, topology, known))
        labels.update(self._plugin_labels(plugin, host, partial, problems))
        metrics = (self.manager.answer(plugin, hookspec.METRICS, problems, host=host, devices=list(devices))
                   if with_metrics else [])
        return partial.model_copy(update={"labels": labels, "metrics": metrics})

    def worker_needs(self, plugin: str, units: Sequence[str], problems: list[Problem] | None = None) -> WorkerNeeds:
        """What the family's workers need for these units: computed here, once, so outputs never call plugins.
        A key of the plugin's visible env that is no visibility variable of the family is dropped, said in
        ``problems``: the node's processes keep their own value of it."""
        custom_env = self.manager.implements(plugin, "rayaccel_visible_env")
        declaration = self.manager.family(plugin)
        env_var = declaration.visible_devices_env_var
        if not units:
            visible = {}
        elif custom_env:
            visible = self.manager.visible_env(plugin, units)
            foreign = sorted(set(visible) - set(declaration.visibility_variables))
            if foreign and problems is not None:
                problems.append(self._problem(
                    plugin, "rayaccel_visible_env", "foreign-visible-env",
                    f"sets {', '.join(foreign)}, which is no visibility variable of family {declaration.name} "
                    f"({', '.join(declaration.visibility_variables)}); it is dropped, so a task's process keeps "
                    "the node's value", "set only the family's visible-devices variable, and declare a runtime "
                    "variable that selects the units given in FamilyDeclaration.visible_env_companions; a library "
                    "path or other setting belongs to the node's environment or the runtime's install",
                    severity="warning"))
            visible = {key: value for key, value in visible.items() if key in declaration.visibility_variables}
        else:
            visible = {env_var: ",".join(units)}
        return WorkerNeeds(custom_parse=self.manager.implements(plugin, "rayaccel_parse_visible"),
                           custom_env=custom_env, visible_env=visible,
                           collective_backends=self.manager.answer(plugin, hookspec.COLLECTIVE_BACKENDS))

    def _devices(self, plugin: str, host: Host, problems: list[Problem]) -> list[Device]:
        devices = self.manager.answer(plugin, hookspec.DISCOVER, problems, host=host) or []
        unique: list[Device] = []
        seen: set[str] = set()
        for device in devices:
            if device.id in seen:
                problems.append(self._problem(plugin, "rayaccel_discover", "duplicate-device",
                                              f"reported device id {device.id!r} twice; the second is ignored",
                                              "give every device a unique id (UUID or serial)"))
                continue
            repeated = sorted({p.id for p in device.partitions} & seen)
            if repeated:
                problems.append(self._problem(plugin, "rayaccel_discover", "duplicate-partition",
                                              f"device {device.id} reports partition id {', '.join(repeated)}, "
                                              "which another device or partition already has; the device is "
                                              "ignored", "give every partition the id its runtime accepts, "
                                              "unique on the host (e.g. its MIG-<uuid>)"))
                continue
            seen.add(device.id)
            seen.update(p.id for p in device.partitions)
            unique.append(device)
        fallbacks = [d for d in unique if d.attributes.get(ID_FALLBACK) is not None]
        if fallbacks:
            # One warning per node: the cause (driver, library, partitioning) is the same for all of them.
            first = fallbacks[0]
            more = f" (and {len(fallbacks) - 1} more devices)" if len(fallbacks) > 1 else ""
            problems.append(self._problem(plugin, "rayaccel_discover", "fallback-device-id",
                                          f"device {first.index} has no stable vendor id{more}: "
                                          f"{first.attributes[ID_FALLBACK]}",
                                          "nothing to do unless ids must survive hardware changes; a newer "
                                          "driver or vendor library may report one", severity="warning"))
        return unique

    def _check_sku_agreement(self, plugin: str, catalog: SkuCatalog | None, devices: list[Device],
                             problems: list[Problem]) -> None:
        for device in devices:
            why = sku_disagreement(catalog, device)
            if why is not None:
                problems.append(self._problem(
                    plugin, "rayaccel_sku_catalog", "sku-mismatch", why,
                    "correct the catalog entry (or the fixture) whose PCI id or product name is wrong, so both "
                    "point at one SKU", severity="warning"))
                break  # one per node: the devices of a node are alike

    def _resolve_skus(self, plugin: str, catalog: SkuCatalog | None,
                      devices: list[Device]) -> tuple[list[Device], list[SkuRecord | None]]:
        resolved, skus = [], []
        for device in devices:
            sku = resolve_sku(catalog, device)
            skus.append(sku)
            if sku is None:
                resolved.append(device.model_copy(update={"sku": None}) if device.sku else device)
                continue
            resolved.append(device.model_copy(update={
                "sku": sku.id,
                "architecture": device.architecture or sku.architecture,
                "memory_mib": device.memory_mib if device.memory_mib is not None else sku.memory_mib,
            }))
        return resolved, skus

    def _topology(self, plugin: str, host: Host, devices: list[Device], problems: list[Problem]) -> Topology:
        topology = self.manager.answer(plugin, hookspec.TOPOLOGY, problems, host=host, devices=list(devices))
        if any(domain_label_value(d.id) != d.id for d in topology.domains):
            # Domain ids name labels and resources: each as one valid value, still one per domain.
            topology = topology.model_copy(update={"domains": [
                d.model_copy(update={"id": domain_label_value(d.id)}) for d in topology.domains]})
        errors = topology_errors(devices, topology)
        if not errors:
            return topology
        problems.append(self._problem(plugin, "rayaccel_topology", "inconsistent-topology",
                                      "; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if errors[3:] else ""),
                                      "report links only between discovered device ids, once per pair"))
        ids = {d.id for d in devices}
        return topology.model_copy(update={
            "links": [ln for ln in topology.links if ln.a in ids and ln.b in ids and ln.a != ln.b],
            "affinities": [a for a in topology.affinities if a.device in ids],
        })

    def _health(self, plugin: str, host: Host, devices: list[Device], problems: list[Problem]) -> list[HealthReport]:
        reports = self.manager.answer(plugin, hookspec.HEALTH, problems, host=host, devices=list(devices))
        if reports is None:
            # No health hook, or it failed: nothing is known, and unknown devices stay schedulable.
            return self._apply_policy(plugin, [HealthReport(device=d.id, state="unknown") for d in devices])
        by_device = {r.device: r for r in reports}
        partitions = [p.id for d in devices for p in d.partitions]
        stray = sorted(set(by_device) - {d.id for d in devices} - set(partitions))
        if stray:
            problems.append(self._problem(plugin, "rayaccel_health", "unknown-device",
                                          f"reported health for unknown devices {stray}",
                                          "report health only for the devices (and partitions) discovery "
                                          "returned"))
        # A partition's own report (a fault in one MIG instance) follows its device's; none: as its device.
        return self._apply_policy(plugin, [by_device.get(d.id, HealthReport(device=d.id, state="unknown"))
                                           for d in devices] + [by_device[p] for p in partitions if p in by_device])

    def _apply_policy(self, plugin: str, reports: list[HealthReport]) -> list[HealthReport]:
        """The reports as the operator's health policy makes them (everything else follows from these)."""
        if self.health_decisions is None:
            return reports
        applied, self._decisions[plugin] = self.health_decisions.apply(self.manager.family(plugin).name, reports,
                                                                       time.monotonic())
        return applied

    def _accelerator_type(self, plugin: str, devices: list[Device], skus: list[SkuRecord | None],
                          from_plugin: str | None, problems: list[Problem], none: bool = False,
                          catalog: SkuCatalog | None = None) -> str | None:
        catalog_types = {s.accelerator_type for s in skus if s is not None}
        if len(catalog_types) > 1:
            problems.append(self._problem(plugin, "rayaccel_sku_catalog", "mixed-skus",
                                          f"devices of several accelerator types on one node: {sorted(catalog_types)}; "
                                          "Ray gives a node one type, the first device's is used",
                                          None, severity="warning"))
        first_sku = skus[0]
        accelerator_type: str | None
        if first_sku is not None:
            accelerator_type = first_sku.accelerator_type
        elif none:
            accelerator_type = None  # the plugin says the node has no Ray accelerator type (as Ray reports)
        else:
            accelerator_type = from_plugin or derive_accelerator_type(devices[0].product_name, plugin.upper())
        for device, sku in zip(devices, skus, strict=True):
            if sku is None:
                scheduled = (f"scheduled as accelerator type {accelerator_type!r}" if accelerator_type is not None
                             else "scheduled with no accelerator type")
                suggested = accelerator_type or derive_accelerator_type(device.product_name, plugin.upper())
                named = repr(device.product_name) if device.product_name else "no product name"
                problems.append(self._problem(
                    plugin, "rayaccel_sku_catalog", "unknown-sku",
                    f"device {device.id} ({named}) is not in the plugin's SKU catalog; it is "
                    f"{scheduled} and labelled rayaccel.io/sku-known=false",
                    f"onboard the SKU: {sku_add_command(plugin, device, suggested, catalog)}", severity="warning"))
                break  # one warning per node is enough: the command is the same for every such device
        return accelerator_type

    @staticmethod
    def _interconnect(topology: Topology, known: list[SkuRecord]) -> str:
        """The best link kind; a fabric the vocabulary has no kind for (links of kind ``other``) by the name the
        SKU catalog gives it (``interconnect: qlink``), which says more than ``other``."""
        best = best_link_kind(topology, LINK_PREFERENCE)
        named = known[0].interconnect if known else None
        return to_label_value(named) or best if best == "other" and named else best

    def _interconnect_problems(self, plugin: str, topology: Topology, known: list[SkuRecord]) -> list[Problem]:
        """Where the node's interconnect label is the catalog's name (the links all of kind ``other``), a name that
        reads as another link kind (``pcie5-x16``: pcie) tells schedulers the devices talk over that fabric, while
        the plugin says their links are none of the vocabulary's kinds: one of the two is wrong (conformance's RAC232
        fails it)."""
        named = known[0].interconnect if known else None
        if not named or best_link_kind(topology, LINK_PREFERENCE) != "other":
            return []
        kind = named_link_kind(named)
        if kind is None:
            return []
        return [self._problem(
            plugin, "rayaccel_sku_catalog", "interconnect-names-a-link-kind",
            f"SKU {known[0].id}'s catalog names its fabric {named!r}, which reads as link kind {kind!r}, while the "
            f"plugin reports the links between its devices as kind 'other'; the node is labelled "
            f"rayaccel.io/interconnect={self._interconnect(topology, known)}",
            f"name the devices' own fabric in the catalog's interconnect (not the host bus or the node's network), "
            f"or report the links as kind {kind!r} if that is what joins the devices", severity="warning")]

    def _vocabulary_labels(self, declaration: FamilyDeclaration, family: FamilyInventory,
                           known: list[SkuRecord], healthy: list[Device]) -> dict[str, str]:
        first = family.devices[0]
        worst = max((HEALTH_ORDER[h.state] for h in family.health), default=0)
        if not healthy:
            health = "unhealthy"
        elif worst >= HEALTH_ORDER["degraded"]:
            health = "degraded"
        else:
            health = "healthy"
        labels = family_identity_labels(declaration, family.accelerator_type)
        labels.update({
            "rayaccel.io/sku-known": "true" if family.sku_known else "false",
            "rayaccel.io/count": str(len(healthy)),
            "rayaccel.io/interconnect": self._interconnect(family.topology, known),
            "rayaccel.io/health": health,
        })
        if family.sku_known and known:
            labels["rayaccel.io/sku"] = known[0].id
        optional = {
            "rayaccel.io/memory-mib": first.memory_mib,
            "rayaccel.io/architecture": first.architecture,
            "rayaccel.io/driver-version": first.driver_version,
            "rayaccel.io/runtime-version": first.runtime_version,
        }
        labels.update({k: to_label_value(str(v)) for k, v in optional.items() if v is not None and str(v)})
        kinds = sorted({p.kind for d in healthy for p in d.partitions})
        if kinds:
            labels["rayaccel.io/partition-kind"] = kinds[0] if len(kinds) == 1 else "mixed"
        for ids in family.partition_units.values():
            partition = next(p for d in healthy for p in d.partitions if p.id == ids[0])
            labels[partition_label(partition.kind, partition.profile)] = str(len(ids))
        if family.topology.domains:
            # The largest first (the unnumbered keys, as on a node with one domain); every other one numbered.
            largest, *others = sorted(family.topology.domains, key=lambda d: -d.size)
            labels["rayaccel.io/scale-up-domain"] = largest.id
            if largest.kind in GPU_DOMAIN_KINDS:
                labels[RAY_GPU_DOMAIN_LABEL] = largest.id  # what Ray's topology_strategy packs a group into
            labels["rayaccel.io/scale-up-domain-kind"] = largest.kind
            labels["rayaccel.io/scale-up-domain-size"] = str(largest.size)
            if others:
                labels["rayaccel.io/scale-up-domain-count"] = str(1 + len(others))
            for n, domain in enumerate(others, start=1):
                labels[f"rayaccel.io/scale-up-domain-{n}"] = domain.id
                labels[f"rayaccel.io/scale-up-domain-{n}-size"] = str(domain.size)
        return {k: v for k, v in labels.items() if v != ""}

    def _plugin_labels(self, plugin: str, host: Host, family: FamilyInventory,
                       problems: list[Problem]) -> dict[str, str]:
        extra = self.manager.answer(plugin, hookspec.LABELS, problems, host=host, inventory=family)
        accepted: dict[str, str] = {}
        for key, value in extra.items():
            why = None
            if key.startswith(VOCABULARY_PREFIX):
                why = f"label {key!r} uses the SDK's own prefix {VOCABULARY_PREFIX}"
            elif key.startswith(RAY_LABEL_PREFIX) and key not in family.family.ray_labels:
                why = f"label {key!r} uses Ray's reserved prefix {RAY_LABEL_PREFIX}"
            elif "/" not in key:
                why = f"label {key!r} has no prefix"
            else:
                errors = label_errors({key: value})
                why = errors[0] if errors else None
            if why:
                problems.append(self._problem(plugin, "rayaccel_labels", "invalid-label", why + "; it is dropped",
                                              "use your vendor's DNS prefix (e.g. acme.com/...) and Ray's label "
                                              "syntax", severity="warning"))
                continue
            accepted[key] = value
        return accepted

    # The node ----------------------------------------------------------------------------------

    def _node_resources(self, families: Iterable[FamilyInventory], problems: list[Problem]) -> dict[str, float]:
        resources: dict[str, float] = {}
        owner: dict[str, str] = {}
        for family in families:
            for name, value in family.resources.items():
                if name in resources and not name.startswith("accelerator_type:"):
                    problems.append(self._problem(
                        family.plugin, "rayaccel_resources", "resource-collision",
                        f"resource {name!r} is also provided by plugin {owner[name]} on this node; "
                        f"{owner[name]}'s count is kept",
                        "disable one of the two plugins on this node with RAYACCEL_DISABLE"))
                    continue
                if name.startswith("accelerator_type:") and any(k.startswith("accelerator_type:") for k in resources):
                    continue  # Ray gives a node one accelerator type: the first family's
                resources[name] = value
                owner[name] = family.plugin
        return resources

    def _node_labels(self, families: list[FamilyInventory], problems: list[Problem]) -> dict[str, str]:
        usable = [f for f in families if f.schedulable_units] or families
        if not usable:
            return {}
        primary = usable[0]
        if len(families) > 1:
            problems.append(self._problem(
                primary.plugin, None, "several-families",
                f"the node has devices of several families ({', '.join(f.family.name for f in families)}); "
                f"node labels describe {primary.family.name}, the first with usable devices",
                None, severity="warning"))
        errors = label_errors(primary.labels)
        if errors:
            problems.append(self._problem(primary.plugin, "rayaccel_labels", "invalid-label", "; ".join(errors),
                                          "report values that fit Ray's label syntax"))
            return {k: v for k, v in primary.labels.items() if not label_errors({k: v})}
        return dict(primary.labels)

    def _problem(self, plugin: str, hook: str | None, code: str, message: str, fix: str | None,
                 severity: str = "error") -> Problem:
        dist = self.manager.plugin(plugin).distribution if plugin in self.manager.plugin_names() else None
        return Problem(plugin=plugin, distribution=dist, hook=hook, code=code, message=message, fix=fix,
                       severity=severity)


def schedulable_partitions(resource_name: str, healthy: Sequence[Device],
                           states: Mapping[str, str]) -> tuple[dict[str, list[str]], list[str]]:
    """The Ray resource of each partition profile -> its partitions that take work (on healthy devices, not
    unhealthy themselves), in discovery order; and the partitions refused because their resource or label
    name is already another (kind, profile)'s (kind 'mig-a' profile 'b' and kind 'mig' profile 'a-b' both
    spell ``partition-mig-a-b``): one name must never stand for slices of different kinds or sizes."""
    offered: dict[str, list[str]] = {}
    named: dict[str, tuple[str, str]] = {}
    refused: list[str] = []
    for device in healthy:
        for partition in device.partitions:
            if states.get(partition.id) == "unhealthy":
                continue
            pair = (partition.kind, partition.profile)
            names = (partition_resource_name(resource_name, *pair), partition_label(*pair))
            taken = next((named[n] for n in names if named.get(n, pair) != pair), None)
            if taken is not None:
                refused.append(f"partition {partition.id!r} (kind {pair[0]!r}, profile {pair[1]!r}) would be "
                               f"offered under the same name as kind {taken[0]!r}, profile {taken[1]!r}")
                continue
            named.update(dict.fromkeys(names, pair))
            offered.setdefault(names[0], []).append(partition.id)
    return offered, refused


def partition_label(kind: str, profile: str) -> str:
    """The node label counting one partition profile's instances: ``rayaccel.io/partition-mig-1g.10gb``."""
    return f"{VOCABULARY_PREFIX}partition-{kind}-{profile}"


def family_identity_labels(declaration: FamilyDeclaration, accelerator_type: str | None) -> dict[str, str]:
    """The labels every node of a family publishes that need no device: its family, vendor and Ray
    accelerator type (also what a node type that does not exist yet can promise, rayaccel.inventory.cloud)."""
    labels = {"rayaccel.io/family": declaration.name, "rayaccel.io/vendor": to_label_value(declaration.vendor)}
    if accelerator_type is not None:
        labels[RAY_ACCELERATOR_TYPE_LABEL] = accelerator_type
    return labels


def collect_inventory(manager: PluginManager | None, host: Host,
                      plugins: Sequence[str] | None = None, with_metrics: bool = True) -> NodeInventory:
    """The inventory of ``host``, which whoever starts the work chose (the CLI, the driver, the monitor, the
    testing kit: this layer knows no simulated machine); ``manager`` None: the process's plugins."""
    manager = manager or default_manager()
    return InventoryBuilder(manager, plugins).build(host, with_metrics=with_metrics)
