"""A metadata server answering an HTTP error status: unknown and reported, never the error page as a value (RAC204).

GCE's metadata server answers a key it does not define with 404 and Google's HTML error page ("Error 404 (Not
Found)!!1 ... The requested URL <code>/computeMetadata/v1/...</code> was not found on this server", recorded in
kelseyhightower/kubernetes-the-hard-way#454 and #664, googleapis/gcp-metadata#657), a request it refuses with 403
(googleapis/google-auth-library-python#916) and a failure of its own with 500 (googleapis/gcp-metadata#436) or
503. Ray's TPU manager reads every status but 200 as no value. A plugin that takes the body whatever the status
puts the page into labels and resources; one that takes a 403, 500 or 503 for a key not defined leaves the slice
unknown without saying why. A 404 is the server's own answer that the key is not set: unknown, and nothing to
report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from rayaccel.hosts.fixtures import Fixture
from rayaccel.records import FamilyInventory

#: Error statuses the metadata server answers, and their reason phrases.
ERROR_STATUSES = {403: "Forbidden", 404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable"}
#: The statuses that are the server's own answer that a key is not set (unknown, nothing to report).
NOT_DEFINED = 404
SCENARIO = "the metadata server answers HTTP {status}"


def error_page(status: int, url: str) -> str:
    """Google's error page for ``status`` on ``url``, as the metadata server sends it (404's words as recorded)."""
    reason = ERROR_STATUSES[status]
    words = (f"The requested URL <code>{urlsplit(url).path}</code> was not found on this server."
             if status == NOT_DEFINED else f"{status} {reason}.")
    return ("<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <meta name=viewport content=\"initial-scale="
            "1, minimum-scale=1, width=device-width\">\n  <title>Error " f"{status} ({reason})!!1</title>\n  <a href=//"
            "www.google.com/><span id=logo aria-label=Google></span></a>\n  <p><b>" f"{status}.</b> <ins>That\u2019s "
            f"an error.</ins>\n  <p>{words}  <ins>That\u2019s all we know.</ins>\n")


def error_status_patches(fx: Fixture) -> dict[str, dict[str, Any]]:
    """Merge patches answering every URL of the fixture's metadata server with each error status."""
    if not fx.host.http:
        return {}
    return {SCENARIO.format(status=status): {"http": {url: {"status": status, "body": error_page(status, url)}
                                                     for url in fx.host.http}} for status in ERROR_STATUSES}


def from_the_page(value: str, pages: Iterable[str]) -> bool:
    """Whether ``value`` is made of an error page's text: every run of letters and digits in it is in one page, one
    run of three or more at least (the page read as a value, through whatever a label's syntax or a cut made of it)."""
    words = re.findall(r"[A-Za-z0-9]+", value)
    return any(len(w) >= 3 for w in words) and any(all(w in page for w in words) for page in pages)


def error_status_differences(scenario: str, now: FamilyInventory | None, healthy: FamilyInventory | None,
                             reported: bool, pages: Iterable[str] = ()) -> list[str]:
    """What an error status made of the machine's facts: a label or resource whose value came from somewhere
    else than the machine (`invariant an-error-status-is-no-value`), and facts gone unknown with no problem saying
    why under a status other than 404 (`invariant an-error-status-is-reported`). ``pages``: the error pages the
    server answered; a value made of their words is said to be the page read as a value, any other is said to be
    the plugin's own under the failed status (a fallback, a default: held-out round 17's p1, a topology built from
    the host's chip grid, once called the error page)."""
    if now is None or healthy is None:
        return []
    texts = list(pages)
    made_up = [(f"label {key}={value!r} where the machine gives {healthy.labels[key]!r}", value)
               for key, value in now.labels.items() if key in healthy.labels and healthy.labels[key] != value]
    made_up += [(f"resource {key!r}, which the machine does not give", key) for key in now.resources
                if key not in healthy.resources]
    domains = {d.id for d in healthy.topology.domains}
    made_up += [(f"domain {d.id!r}, which the machine is not in", d.id) for d in now.topology.domains
                if d.id not in domains]
    wrong = [f"{scenario}: invariant an-error-status-is-no-value: {line} ("
             + (f"{value!r} is made of the error page's words: the page read as a value"
                if from_the_page(value, texts) else
                f"{value!r} is the plugin's own, given while the server answered an error, not the machine's")
             + "; read a body only with status 200, and without one leave the fact unknown)"
             for line, value in made_up[:3]]
    lost = sorted({*healthy.labels} - {*now.labels}) + sorted({*healthy.resources} - {*now.resources})
    if lost and not reported and not scenario.endswith(str(NOT_DEFINED)):
        wrong.append(f"{scenario}: invariant an-error-status-is-reported: {', '.join(lost[:4])} left out with no "
                     "problem saying why (an error status is the server failing, not a key that is not set: "
                     "report it, naming the status)")
    return wrong
