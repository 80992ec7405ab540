"""Held-out grading, round 6 (issue 46, lane H2): the untaken paths its Neuron, TPU and Gaudi survivors needed, on
the reference plugins wrapped with the survivor's one edit (registered under the real plugin's name, graded on its
own fixtures, as the round graded them).

The corpus grades the same invariants on plugins of other shapes (c-hint-row-of-next-size,
c-hint-gives-fabric-it-lacks: RAC209's hint-is-its-stated-machine; c-metadata-error-page-as-pool,
c-metadata-failure-as-unset: RAC204's error statuses; c-group-named-by-own-host, c-group-named-by-constant:
RAC202's a-group-without-its-variable-is-no-group; c-link-listing-skips-cut-line, c-status-listing-missing-as-lost:
RAC204's a-cut-listing-is-reported); the TPU worker-label mutants are graded here alone
(``TPU_LABEL_MUTANTS``: one claimant of TPU_VISIBLE_CHIPS per manager).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutant_grading import wrapped
from test_conformance_heldout5 import rac270_alone

import rayaccel_neuron.plugin as neuron_plugin
from rayaccel import CloudHint
from rayaccel.hosts.fixtures import installed_fixtures, load_fixture
from rayaccel.plugins.instance_types import cloud_hint
from rayaccel.plugins.manager import PluginManager
from rayaccel_conformance.checks import all_checks
from rayaccel_conformance.checks.cloud_machines import stated_instance_types
from rayaccel_conformance.checks.cut_listings import cut_mid_line
from rayaccel_conformance.checks.error_statuses import error_page
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CHECKS, CheckFailed
from rayaccel_testplugins.corpus_ray_labels import TPU_LABEL_MUTANTS

NEURON_PACKAGE = neuron_plugin.__file__.rsplit("/", 1)[0]


def test_the_instance_type_a_host_states_is_read_from_ec2_s_dmi_product_name_only_in_its_shape() -> None:
    fixture = load_fixture(installed_fixtures(PluginManager())["neuron/trn2u.48xlarge-ultraserver-x2"])
    assert stated_instance_types(fixture) == [("aws", "trn2u.48xlarge", "/sys/devices/virtual/dmi/id/product_name")]
    for board in ("Standard PC (Q35 + ICH9, 2009)\n", "Virtual Machine\n", ""):
        files = {**fixture.host.files, "/sys/devices/virtual/dmi/id/product_name": board}
        assert stated_instance_types(fixture.model_copy(update={"host": fixture.host.model_copy(
            update={"files": files})})) == [], board


@pytest.mark.parametrize(("edited", "count"), [("trn2u.48xlarge", 128), ("trn2.48xlarge", 32)])
def test_a_neuron_hint_unlike_the_fixture_its_host_states_fails_rac209_naming_it(edited: str, count: int) -> None:
    def hints(provider: str, instance_type: str) -> CloudHint | None:  # the table, one row's count edited
        found = cloud_hint(Path(NEURON_PACKAGE) / "instance-types.yaml", provider, instance_type)
        return found.model_copy(update={"count": count}) if found and instance_type == edited else found

    subject = wrapped(neuron_plugin, "neuron", NEURON_PACKAGE, rayaccel_cloud_hints=hints)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC209"].function(subject)
    said = str(failed.value)
    assert f"hint for aws {edited}: count {count}" in said, said
    if edited == "trn2u.48xlarge":  # no fixture is named for it: only its host says what it is
        assert "invariant hint-is-its-stated-machine" in said and "ultraserver-x2 (its /sys/devices/virtual/dmi/id/" \
            "product_name states that instance type) discovery counts 64 neuron_cores" in said, said


def test_a_hint_equal_to_one_of_its_type_s_fixtures_at_its_defaults_passes_rac209() -> None:
    # trn2.48xlarge's two fixtures count 64 (LNC 2, the default) and 128 (NEURON_LOGICAL_NC_CONFIG=1): 64 is the type's.
    all_checks()
    said = CHECKS["RAC209"].function(Subject("neuron", PluginManager()))
    assert "trn2.48xlarge: 64 neuron_cores" in said, said


def test_the_error_page_is_google_s_with_the_404_words_naming_the_path() -> None:
    page = error_page(404, "http://metadata.google.internal/computeMetadata/v1/instance/attributes/tpu-env")
    assert "<title>Error 404 (Not Found)!!1</title>" in page
    assert "The requested URL <code>/computeMetadata/v1/instance/attributes/tpu-env</code> was not found" in page
    assert "<title>Error 503 (Service Unavailable)!!1</title>" in error_page(503, "http://x/y")


def test_a_tpu_plugin_reading_a_failing_metadata_server_as_keys_not_set_fails_rac204_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rayaccel_tpu import slice_info

    def unset_unless_200(self: Any, key: str) -> str | None:  # the one edit: every status but 200 is "not set"
        response = self.host.http_get(slice_info.METADATA_URL + key, headers=slice_info.METADATA_HEADERS,
                                      timeout=slice_info.METADATA_TIMEOUT)
        return response.body if response.status == 200 and response.body else None

    all_checks()
    subject = Subject("tpu", PluginManager())
    assert "HTTP 500" in str(CHECKS["RAC204"].function(subject, "tpu/v5e-8"))  # the plugin as shipped passes
    monkeypatch.setattr(slice_info._Metadata, "get", unset_unless_200)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC204"].function(Subject("tpu", PluginManager()), "tpu/v5e-8")
    said = str(failed.value)
    assert "the metadata server answers HTTP 500: invariant an-error-status-is-reported: " in said, said
    assert "ray.io/tpu-slice-name" in said and "HTTP 404" not in said, said


@pytest.mark.parametrize("mutant", TPU_LABEL_MUTANTS, ids=lambda cls: cls.__name__)
def test_a_tpu_worker_label_otherwise_than_ray_reads_it_fails_rac270_naming_it(mutant: type[Any]) -> None:
    fixture, said = rac270_alone(mutant)
    assert (f"invariant labels-as-ray-reads-them, {fixture} with TPU_WORKER_ID=1 beside the metadata server's 0: "
            "label ray.io/tpu-worker-id='0'; Ray's TPUAcceleratorManager gives '1'") in said


def test_the_tpu_plugin_reading_the_metadata_server_s_worker_before_tpu_worker_id_fails_rac270(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rayaccel_tpu import slice_info

    all_checks()
    assert "TPU_VISIBLE_CHIPS as Ray's" in str(CHECKS["RAC270"].function(Subject("tpu", PluginManager()), "tpu/v5e-8"))
    # The one edit: the plugin looks for GKE's worker index under a name nothing sets, so the server's number wins.
    monkeypatch.setattr(slice_info, "ENV_WORKER_ID", "TPU_WORKER_INDEX")
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC270"].function(Subject("tpu", PluginManager()), "tpu/v5e-8")
    assert ("invariant labels-as-ray-reads-them, tpu/v5e-8 with TPU_WORKER_ID=1 beside the metadata server's 0: label "
            "ray.io/tpu-worker-id='0'; Ray's TPUAcceleratorManager gives '1'") in str(failed.value), failed.value


@pytest.mark.parametrize("group", ["own-host", "constant"])
def test_a_neuron_ultraserver_group_made_up_without_its_leader_variable_fails_rac202(
        monkeypatch: pytest.MonkeyPatch, group: str) -> None:
    from rayaccel_neuron import instance

    all_checks()
    ref = "neuron/trn2u.48xlarge-ultraserver-x2"
    assert "1 domains, consistent" in str(CHECKS["RAC202"].function(Subject("neuron", PluginManager()), ref))
    shipped = instance.ultraserver_place

    def place(host: Any, instance_type: str | None) -> Any:  # the one edit: a group made up without the leader
        found = shipped(host, instance_type)  # (the server id beside it names the group: that is passed over)
        if instance_type in instance.ULTRASERVER_INSTANCE_TYPES and not host.getenv(instance.ENV_LEADER):
            return instance.UltraServerPlace(group=host.name if group == "own-host" else "ultraserver", node=None)
        return found

    monkeypatch.setattr(instance, "ultraserver_place", place)
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC202"].function(Subject("neuron", PluginManager()), ref)
    said = str(failed.value)
    assert (f"invariant a-group-without-its-variable-is-no-group: {ref} with NEURON_GLOBAL_TOPOID0_HOST unset: "
            "ultraserver domain") in said and "of 64 devices (this host has 16)" in said, said


def test_a_listing_is_cut_in_the_middle_of_the_line_after_its_first_half() -> None:
    link = "".join(f"port {p:2d}:\tUP\n" for p in range(24))
    cut = cut_mid_line(link)
    assert cut is not None and cut.endswith("port 11:\tUP\nport ") and cut.count("\n") == 12, cut
    assert cut_mid_line("hl-smi 1.18.0\n") is None


def test_a_gaudi_plugin_skipping_a_cut_port_line_is_named_only_where_nothing_reports_the_cut(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rayaccel_gaudi import hlsmi, probe

    all_checks()
    shipped, shipped_report = hlsmi.parse_ports, probe.report_problem

    def skipping(text: str, command: str) -> dict[int, str]:  # a line it cannot read skipped, not reported
        whole = "".join(line for line in str(text).splitlines(keepends=True) if hlsmi._PORT_LINE.match(line))
        return shipped(whole, command)

    monkeypatch.setattr(probe, "parse_ports", skipping)
    # The shipped probe still names the shorter listing (hl-smi-ports-inconsistent): reported, so no failure.
    assert "cut off mid-line" in str(CHECKS["RAC204"].function(Subject("gaudi", PluginManager()), "gaudi/hls-gaudi2"))
    monkeypatch.setattr(probe, "report_problem", lambda code, *a, **k: None if code == "hl-smi-ports-inconsistent"
                        else shipped_report(code, *a, **k))
    with pytest.raises(CheckFailed) as failed:
        CHECKS["RAC204"].function(Subject("gaudi", PluginManager()), "gaudi/hls-gaudi2")
    assert ("`hl-smi -n link -i 0000:33:00.0` cut off mid-line: invariant a-cut-listing-is-reported: the links differ"
            in str(failed.value)), failed.value
