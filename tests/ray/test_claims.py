"""The claims table's rules without Ray (rayaccel.ray.claims): tokens Ray reissued end their old claims,
the best-connected free units are chosen, cordons keep a device out, and the table never double-books."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from rayaccel.ray.claims import ClaimsTable, CordonedUnitsError, FamilyUnits, load_placement, placement_table
from rayaccel.simulation.host_factory import simulated_host
from rayaccel.support.liveness import alive
from rayaccel.support.polling import wait_for

# Six devices: 0-1-2 and 3-4-5 fully linked (weight 200), the islands joined by weaker links (32).
TWO_ISLANDS = FamilyUnits.from_json("QTS", {
    "units": ["0", "1", "2", "3", "4", "5"], "devices": [[i] for i in range(6)],
    "device_ids": [f"dev{i}" for i in range(6)],
    "links": [[i, j, 200 if i // 3 == j // 3 else 32] for i in range(6) for j in range(i + 1, 6)],
    "domains": {"QTS_domain_a": [0, 1, 2], "QTS_domain_b": [3, 4, 5]}})


@pytest.fixture
def table(tmp_path):
    return ClaimsTable(tmp_path / "claims.json", lock_timeout=5)


def test_an_idle_node_gives_the_lowest_best_connected_units(table):
    assert table.claim(TWO_ISLANDS, ["0", "1", "2"], pid=os.getpid()) == ["0", "1", "2"]


def test_a_busy_unit_sends_a_three_unit_task_to_the_other_island(table):
    me = os.getpid()
    assert table.claim(TWO_ISLANDS, ["0"], pid=me) == ["0"]
    # Another live process (the test's parent) asks with the next tokens Ray would hand out.
    assert table.claim(TWO_ISLANDS, ["1", "2", "3"], pid=os.getppid()) == ["3", "4", "5"]


def test_a_reissued_token_ends_its_old_claim(table):
    parent = os.getppid()
    table.claim(TWO_ISLANDS, ["0", "1", "2"], pid=parent)
    # Token 1 came back from Ray: the claim holding it is over, so its units are free again.
    assert table.claim(TWO_ISLANDS, ["1", "4", "5"], pid=os.getpid()) == ["0", "1", "2"]
    (claim,) = table.snapshot()["QTS"]
    assert claim["pid"] == os.getpid()


def test_the_claims_of_a_dead_process_are_dropped(table):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    table.claim(TWO_ISLANDS, ["0", "1", "2"], pid=int(dead.stdout))
    assert table.claim(TWO_ISLANDS, ["3", "4", "5"], pid=os.getpid()) == ["0", "1", "2"]


def test_the_claims_of_a_process_whose_number_a_later_process_took_are_dropped(table):
    """The kernel hands a dead holder's pid to the next process that starts (a busy node wraps the counter in
    a minute): a process holding the number that started after the claim is not the holder."""
    later = subprocess.Popen(["sleep", "60"])
    try:
        now = time.time
        with pytest.MonkeyPatch.context() as mp:  # the dead holder's claim, made two minutes before `later` started
            mp.setattr(time, "time", lambda: now() - 120)
            table.claim(TWO_ISLANDS, ["0", "1", "2"], pid=later.pid)
        assert table.claim(TWO_ISLANDS, ["3", "4", "5"], pid=os.getpid()) == ["0", "1", "2"]
    finally:
        later.kill()
        later.wait()


def test_the_claims_of_an_unreaped_worker_are_dropped(table):
    """A worker that ended but was not reaped yet (a zombie) still answers signal 0; it holds nothing."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        wait_for(lambda: not alive(ended.pid), timeout=60, what="the child ended (a zombie, not reaped)")
        assert ended.returncode is None  # not reaped: its pid still exists
        table.claim(TWO_ISLANDS, ["0", "1", "2"], pid=ended.pid)
        assert table.claim(TWO_ISLANDS, ["3", "4", "5"], pid=os.getpid()) == ["0", "1", "2"]
    finally:
        ended.wait(timeout=60)


def test_the_same_process_asking_again_keeps_its_units_and_release_frees_them(table):
    table.claim(TWO_ISLANDS, ["9"], pid=os.getppid())  # someone else on unit 0
    first = table.claim(TWO_ISLANDS, ["0", "1"], pid=os.getpid())
    assert table.claim(TWO_ISLANDS, ["1", "0"], pid=os.getpid()) == first == ["1", "2"]
    table.release("QTS", pid=os.getpid())
    assert [c["units"] for c in table.snapshot()["QTS"]] == [["0"]]


def test_a_cordoned_device_is_never_chosen_until_uncordoned(table):
    table.cordon("QTS", "dev4", ["4"])
    assert table.tag_cordon("QTS", "dev4", ["0"])
    got = [table.claim(TWO_ISLANDS, [t], pid=p) for t, p in [("1", os.getpid()), ("2", os.getppid())]]
    assert table.claim(TWO_ISLANDS, ["3", "4", "5"], pid=1) == ["2", "3", "5"] and got == [["0"], ["1"]]
    assert table.cordons("QTS") == {"dev4": ["0"]}
    table.uncordon("QTS", "dev4")
    assert table.cordons("QTS") == {}


def test_a_task_holding_a_domain_resource_gets_units_of_that_domain(table):
    assert table.claim(TWO_ISLANDS, ["0", "1"], within="QTS_domain_b", pid=os.getpid()) == ["3", "4"]


def test_placement_table_of_a_simulated_node_round_trips(tmp_path):
    from rayaccel.inventory.builder import InventoryBuilder
    from rayaccel.plugins.manager import PluginManager

    manager = PluginManager()
    inventory = InventoryBuilder(manager, ["nvidia"]).build(simulated_host("nvidia/dgx-h100", manager=manager))
    (family,) = load_placement(json.dumps(placement_table(inventory))).values()
    assert family.resource == "GPU" and len(family.units) == 8 and len(family.device_units) == 8
    assert all(family.graph[a][b] > 0 for a in family.units for b in family.units if a != b)  # NVSwitch: all linked


def test_a_new_cordon_is_never_given_out_the_task_fails_clearly_when_no_healthy_unit_frees(table):
    # A cordon waiting for its group's token, every healthy unit busy: the task holding the spare token
    # gets no unit rather than the failed one (issue 39: 17 tasks ran on a cordoned GPU).
    table.cordon("QTS", "dev5", ["5"])
    table.claim(TWO_ISLANDS, ["0", "1", "2", "3", "4"], pid=os.getppid())
    with pytest.raises(CordonedUnitsError, match=r"only 0 healthy unit\(s\) stayed free for 0.2 s: the health "
                                                 r"monitor cordoned dev5"):
        table.claim(TWO_ISLANDS, ["9"], pid=os.getpid(), wait=0.2)
    assert [c["units"] for c in table.snapshot()["QTS"] if not c.get("cordon")] == [["0", "1", "2", "3", "4"]]


def test_a_task_waiting_out_a_new_cordon_says_so_and_its_claim_replaces_that(table):
    table.cordon("QTS", "dev5", ["5"])
    table.claim(TWO_ISLANDS, ["0", "1", "2", "3", "4"], pid=os.getppid())
    waiting = threading.Thread(target=table.claim, args=(TWO_ISLANDS, ["9"]), kwargs={"pid": 1, "wait": 20})
    waiting.start()
    wait_for(table.snapshot, lambda t: any(c.get("waiting") for c in t["QTS"]), timeout=20, interval=0.01,
             what="the waiting claim")
    table.release("QTS", pid=os.getppid())
    waiting.join(timeout=30)
    assert [(c["pid"], c["units"]) for c in table.snapshot()["QTS"] if not c.get("cordon")] == [(1, ["0"])]


def test_a_new_cordon_sends_the_task_to_the_healthy_unit_a_running_task_releases(table):
    table.cordon("QTS", "dev5", ["5"])
    holder = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        table.claim(TWO_ISLANDS, ["0", "1", "2", "3", "4"], pid=holder.pid)
        releaser = threading.Timer(0.3, table.release, ("QTS", holder.pid))
        releaser.start()
        assert table.claim(TWO_ISLANDS, ["9"], pid=os.getpid(), wait=20) == ["0"]
        releaser.join()
    finally:
        holder.communicate(b"", timeout=30)


def test_a_stale_short_table_shares_the_oldest_claim_never_a_cordoned_unit(table, caplog):
    # A tagged cordon and a live claim the tokens do not account for (a table of another node's life).
    table.cordon("QTS", "dev5", ["5"])
    assert table.tag_cordon("QTS", "dev5", ["7"])
    table.claim(TWO_ISLANDS, ["0", "1", "2", "3", "4"], pid=os.getppid())
    assert table.claim(TWO_ISLANDS, ["9"], pid=os.getpid()) == ["0"]
    assert "only 0 QTS units unclaimed for a 1-unit task" in caplog.text


def test_a_full_domain_gives_the_best_free_units_elsewhere(table):
    table.claim(TWO_ISLANDS, ["0", "1"], within="QTS_domain_b", pid=os.getppid())
    assert table.claim(TWO_ISLANDS, ["2", "3"], within="QTS_domain_b", pid=os.getpid()) == ["0", "1"]


def test_a_node_of_two_islands_publishes_both_domains(monkeypatch):
    from rayaccel.inventory.builder import InventoryBuilder
    from rayaccel.plugins.manager import PluginManager
    from rayaccel.ray.claims import domain_resources

    monkeypatch.setenv("RAYACCEL_PLUGINS", "qts=rayaccel_testplugins.qts")
    manager = PluginManager()
    inventory = InventoryBuilder(manager, ["qts"]).build(simulated_host("qts/qts-6", manager=manager))
    labels = inventory.labels
    assert {k: v for k, v in labels.items() if k.startswith("rayaccel.io/scale-up-domain")} == {
        "rayaccel.io/scale-up-domain": "qts-node-qlink0", "rayaccel.io/scale-up-domain-kind": "other",
        "rayaccel.io/scale-up-domain-size": "3", "rayaccel.io/scale-up-domain-count": "2",
        "rayaccel.io/scale-up-domain-1": "qts-node-qlink1", "rayaccel.io/scale-up-domain-1-size": "3"}
    assert domain_resources(inventory) == {"QTS_domain_qts-node-qlink0": 3.0, "QTS_domain_qts-node-qlink1": 3.0}


def test_fractions_of_one_instance_share_its_unit_and_a_whole_task_ends_them(table):
    table.claim(TWO_ISLANDS, ["9"], pid=1)  # unit 0 held by another live process
    first = table.claim(TWO_ISLANDS, ["3"], pid=os.getppid(), shared=True)
    assert table.claim(TWO_ISLANDS, ["3"], pid=os.getpid(), shared=True) == first == ["1"]
    # Ray gives token 3 whole to a task only once no fraction of it runs: those claims are over.
    assert table.claim(TWO_ISLANDS, ["3"], pid=os.getpid()) == ["1"]
    assert [c["units"] for c in table.snapshot()["QTS"]] == [["0"], ["1"]]


# A uniform family (one unit per device, every pair linked alike): Ray's ids are as good as any choice.
UNIFORM_ENTRY = {"units": ["0", "1", "2", "3", "4", "5"], "devices": [[i] for i in range(6)],
                 "device_ids": [f"dev{i}" for i in range(6)],
                 "links": [[i, j, 100] for i in range(6) for j in range(i + 1, 6)], "domains": {}}
UNIFORM = FamilyUnits.from_json("ACC", UNIFORM_ENTRY)

_HOLDER = """
import json, sys
from rayaccel.ray.claims import ClaimsTable, FamilyUnits
table = ClaimsTable(sys.argv[1], lock_timeout=5)
units = table.claim(FamilyUnits.from_json("ACC", json.loads(sys.argv[2])), json.loads(sys.argv[3]), wait=5)
print(json.dumps(units), flush=True)
sys.stdin.read()  # holds its units until the test closes its stdin (or kills it)
table.release("ACC")
"""


class Holder:
    """Another process (a worker) holding the units its tokens got, until closed or killed."""

    def __init__(self, table: ClaimsTable, tokens: list[str]) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _HOLDER, str(table.path), json.dumps(UNIFORM_ENTRY),
                                         json.dumps(tokens)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        assert self.process.stdout is not None
        self.units = json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.communicate("", timeout=30)


@pytest.fixture
def holders():
    started: list[Holder] = []
    yield lambda table, tokens: started.append(Holder(table, tokens)) or started[-1]
    for holder in started:
        if holder.process.poll() is None:
            holder.close()


def test_a_uniform_family_keeps_rays_ids_and_never_touches_the_table(table, holders):
    assert UNIFORM.uniform and not TWO_ISLANDS.uniform
    assert table.claim(UNIFORM, ["5", "2"]) == ["2", "5"]
    assert holders(table, ["0", "1"]).units == ["0", "1"]
    table.release("ACC")
    assert not table.path.exists() or table.path.stat().st_size == 0  # no claim read or written
    assert table.snapshot() == {}


def test_a_cordoned_unit_of_a_uniform_family_is_replaced_by_one_no_process_holds(table, holders):
    holders(table, ["0"])
    holders(table, ["1"])
    table.cordon("ACC", "dev2", ["2"])
    assert table.claim(UNIFORM, ["2"]) == ["3"]  # not 0 or 1 (other tasks run there), never 2
    # The task Ray gives token 3 later cannot use unit 3 (this process's): it gets a free one instead.
    assert holders(table, ["3"]).units == ["4"]
    table.uncordon("ACC", "dev2")
    assert not table.cordoned_path("ACC").exists()
    assert holders(table, ["4"]).units == ["2"]  # unit 4 is still in use: 2 is healthy again and free
    table.release("ACC")
    assert table.claim(UNIFORM, ["3"]) == ["3"]


def test_a_dead_processs_units_are_free_again_without_asking_whether_it_runs(table, holders):
    holder = holders(table, ["0", "1", "2", "3", "4"])
    table.cordon("ACC", "dev5", ["5"])
    with pytest.raises(CordonedUnitsError, match=r"only 0 healthy unit\(s\) stayed free for 0.2 s: the health "
                                                 r"monitor cordoned dev5"):
        table.claim(UNIFORM, ["5"], wait=0.2)
    holder.process.kill()
    holder.process.wait(timeout=30)
    assert table.claim(UNIFORM, ["5"], wait=5) == ["0"]
    assert not any(c.get("waiting") for c in table.snapshot()["ACC"])


def test_a_uniform_task_waiting_out_a_new_cordon_says_so_and_takes_the_unit_released(table, holders):
    holder = holders(table, ["0", "1", "2", "3", "4"])
    table.cordon("ACC", "dev5", ["5"])
    got: list[list[str]] = []
    waiting = threading.Thread(target=lambda: got.append(table.claim(UNIFORM, ["5"], wait=30)))
    waiting.start()
    wait_for(table.snapshot, lambda t: any(c.get("waiting") for c in t["ACC"]), timeout=20, interval=0.01,
             what="the waiting claim")
    holder.close()
    waiting.join(timeout=40)
    assert got == [["0"]]


def test_a_family_whose_ray_ids_are_not_its_units_shares_fractions_through_the_table(table):
    # A MIG profile's units are partition ids and Ray's tokens indices: uniform (one unit), but not Ray's ids.
    profile = FamilyUnits.from_json("GPU_MIG_3g.40gb", {"units": ["MIG-a"], "devices": [[0]], "device_ids": ["gpu0"],
                                                        "links": [], "domains": {}})
    assert profile.uniform and not profile.rays_ids and not profile.with_rays_ids(None).rays_ids
    assert UNIFORM.rays_ids and UNIFORM.with_rays_ids(list("543210")).rays_ids
    assert not UNIFORM.with_rays_ids(["0", "1"]).rays_ids  # a narrower variable: Ray's ids are not all units
    assert table.claim(profile, ["0"], pid=os.getppid(), shared=True) == ["MIG-a"]
    assert table.claim(profile, ["0"], shared=True, wait=1) == ["MIG-a"]  # the other half of the same instance


def test_a_forked_childs_claim_of_a_uniform_family_is_its_own(table):
    # The process id is kept, not asked at every claim: a forked child must still claim as itself, so that the
    # units its task uses are locked by it, not taken for its parent's claim of the same tokens.
    from rayaccel.ray import claims

    assert table.claim(UNIFORM, ["3"]) == ["3"]
    claimed_read, claimed_write = os.pipe()
    done_read, done_write = os.pipe()
    child = os.fork()
    if child == 0:  # a task of its own holding the parent's tokens, until the parent has looked
        try:
            os.write(claimed_write, ",".join(table.claim(UNIFORM, ["3"])).encode())
            os.read(done_read, 1)
        finally:
            os._exit(0)
    try:
        assert os.read(claimed_read, 100) == b"3"
        table.release("ACC")  # the parent's lock goes; the child's stays
        fd = claims._open(table._family_files("ACC")[0], os.getpid())
        assert not claims._lock_unit(fd, UNIFORM.position["3"], shared=False)
    finally:
        os.write(done_write, b"x")
        os.waitpid(child, 0)
    assert claims._lock_unit(fd, UNIFORM.position["3"], shared=False)  # the kernel dropped the child's lock
    claims._unlock_units(fd)
