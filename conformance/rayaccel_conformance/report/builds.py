"""What build of a plugin was graded: a manifest (path -> sha256) of its files, and one digest over it.

The subject of an attestation, so that a signed report names exactly the code that ran:

- ``wheel``: the wheel file given with ``--conformance-wheel`` (its own sha256), once its files are shown
  to be the installed ones;
- ``installed``: a distribution installed from a wheel or sdist: every file its ``RECORD`` lists, hashed as
  it is on disk now (not the hash RECORD recorded: an installed file edited afterwards must change the
  digest), less the files an installer writes per install (``INSTALLER``, ``REQUESTED``, ``RECORD``,
  ``direct_url.json``) and bytecode;
- ``editable``: an editable install (``pip install -e``) whose RECORD lists only a ``.pth`` or finder
  file: the source files of the distribution's top-level packages, wherever the import system finds them;
- ``module``: a plugin registered by import path (``RAYACCEL_PLUGINS``), with no distribution: the files
  of its top-level package (or the module file).

The digest is sha256 over the manifest's ``<sha256 hex>  <path>\\n`` lines sorted by path, so it changes
when any file's content, name, addition or removal does.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rayaccel.errors import RayaccelError

BuildKind = Literal["wheel", "installed", "editable", "module"]
#: Per-install files: the same build installed twice differs in these.
_VOLATILE = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}
#: A wheel is a few MiB; refuse to hash something that is clearly not one.
MAX_WHEEL_BYTES = 512 * 1024 * 1024


class BuildError(RayaccelError):
    """A build that cannot be identified: missing wheel, unreadable files, a wheel that is not what runs."""


@dataclass(frozen=True)
class Build:
    kind: BuildKind
    name: str  #: the subject's name: ``pkg:pypi/<dist>@<version>``, the wheel's file name or ``module:<name>``
    digest: str  #: ``sha256:<hex>``
    files: dict[str, str]  #: path -> sha256 hex of what ran (for a wheel: of the files inside it)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def manifest_digest(files: dict[str, str]) -> str:
    lines = "".join(f"{sha}  {path}\n" for path, sha in sorted(files.items()))
    return "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest()


def _is_code_file(rel: str) -> bool:
    parts = rel.split("/")
    return "__pycache__" not in parts and not rel.endswith((".pyc", ".pyo"))


def _tree(root: Path, prefix: str) -> dict[str, str]:
    """Every file under ``root`` (a package directory), keyed ``prefix/relative/path``."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = f"{prefix}/{path.relative_to(root).as_posix()}"
        if path.is_file() and _is_code_file(rel):
            files[rel] = _sha256_file(path)
    return files


def _module_files(top: str) -> dict[str, str] | None:
    """The files of top-level package or module ``top`` as the import system finds it; None if it is not found."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    files: dict[str, str] = {}
    if spec.submodule_search_locations:  # a package; a namespace package may span several directories
        for location in spec.submodule_search_locations:
            files.update(_tree(Path(location), top))
    elif spec.origin and Path(spec.origin).is_file():
        origin = Path(spec.origin)
        files[origin.name] = _sha256_file(origin)
    return files or None


def _top_level_names(dist: importlib.metadata.Distribution) -> list[str]:
    text = dist.read_text("top_level.txt")
    names = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not names:  # no top_level.txt (not every build backend writes it): the plugin entry points' modules
        names = [ep.value.split(":")[0].split(".")[0] for ep in dist.entry_points if ep.group == "rayaccel"]
    return sorted(set(names))


def _is_editable(dist: importlib.metadata.Distribution) -> bool:
    raw = dist.read_text("direct_url.json")
    if raw:
        try:
            if json.loads(raw).get("dir_info", {}).get("editable"):
                return True
        except (ValueError, AttributeError):
            pass
    # Older installers write no direct_url.json; an editable RECORD holds nothing but hooks into the import system.
    listed = [str(f) for f in dist.files or [] if ".dist-info/" not in str(f) and ".egg-info/" not in str(f)]
    return bool(listed) and all(f.endswith((".pth", "_finder.py")) or "__editable__" in f for f in listed)


def installed_build(distribution: str) -> Build | None:
    """The installed distribution's build; None when it is not installed here."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    purl = f"pkg:pypi/{normal_name(dist.metadata['Name'] or distribution)}@{dist.version}"
    files: dict[str, str] = {}
    if _is_editable(dist):
        for top in _top_level_names(dist):
            files.update(_module_files(top) or {})
        if not files:
            raise BuildError(f"{distribution} is an editable install whose packages cannot be found: reinstall it")
        return Build("editable", purl, manifest_digest(files), files)
    for entry in dist.files or []:
        rel = str(entry).replace("\\", "/")
        if (rel.rsplit("/", 1)[-1] in _VOLATILE and ".dist-info/" in rel) or not _is_code_file(rel):
            continue
        path = Path(str(dist.locate_file(entry)))
        if path.is_file():
            files[rel] = _sha256_file(path)
        else:
            files[rel] = "missing"  # a listed file that is gone is a different build, not an error
    if not files:
        raise BuildError(f"{distribution} lists no installed files (no RECORD): reinstall it with pip")
    return Build("installed", purl, manifest_digest(files), files)


def module_build(module: str) -> Build | None:
    """A plugin registered by import path: its top-level package's files; None when it is not importable here."""
    top = module.split(".")[0]
    files = _module_files(top)
    if files is None:
        return None
    return Build("module", f"module:{module}", manifest_digest(files), files)


def normal_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_distribution(wheel: Path) -> str:
    """The normalised distribution name a wheel file is named for (``name-version-...whl``)."""
    return normal_name(wheel.name.split("-", 1)[0])


def wheel_build(wheel: str | Path, installed: Build) -> Build:
    """The wheel as the subject, once its files are shown to be the installed (graded) ones.

    A wheel that is not what is installed would attest to code that never ran: :class:`BuildError`.
    """
    wheel = Path(wheel)
    try:
        size = wheel.stat().st_size
        if size > MAX_WHEEL_BYTES:
            raise BuildError(f"--conformance-wheel {wheel}: {size} bytes is not a plugin wheel")
        digest = _sha256_file(wheel)
        with zipfile.ZipFile(wheel) as zf:
            record_name = next((n for n in zf.namelist() if n.endswith(".dist-info/RECORD")), None)
            if record_name is None:
                raise BuildError(f"--conformance-wheel {wheel}: no .dist-info/RECORD inside: not a wheel")
            record = zf.read(record_name).decode("utf-8")
    except OSError as e:
        raise BuildError(f"--conformance-wheel {wheel}: cannot read it: {e.strerror or e}") from None
    except zipfile.BadZipFile:
        raise BuildError(f"--conformance-wheel {wheel}: not a wheel (not a zip archive)") from None
    files = dict(_record_hashes(csv.reader(io.StringIO(record))))
    # Compare what both sides have a name for: the package files (dist-info differs per install).
    ran = {p: h for p, h in installed.files.items() if comparable(p)}
    tops = {p.split("/")[0] for p in ran}
    shipped = {p: h for p, h in files.items() if comparable(p) and _is_code_file(p)
               and (installed.kind != "editable" or p.split("/")[0] in tops)}
    differ = sorted(p for p in set(ran) | set(shipped) if ran.get(p) != shipped.get(p))
    if differ:
        raise BuildError(f"--conformance-wheel {wheel}: the installed {installed.name} is not this wheel "
                         f"({_describe(differ, shipped, ran)}); install the wheel you grade")
    return Build("wheel", wheel.name, "sha256:" + digest, files)


def comparable(path: str) -> bool:
    """A file a wheel and its install both name alike (not metadata, scripts or data moved at install)."""
    return ".dist-info/" not in path and ".data/" not in path and not path.startswith("../")


def _record_hashes(rows: Iterable[list[str]]) -> Iterable[tuple[str, str]]:
    for row in rows:
        if len(row) >= 2 and row[1].startswith("sha256="):
            raw = base64.urlsafe_b64decode(row[1].removeprefix("sha256=") + "==")
            yield row[0], raw.hex()


def _describe(paths: list[str], graded: dict[str, str], here: dict[str, str]) -> str:
    def one(p: str) -> str:
        if p not in here:
            return f"{p} not there"
        if p not in graded:
            return f"{p} added"
        return f"{p} differs"

    shown = ", ".join(one(p) for p in paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def compare(graded: dict[str, str], here: dict[str, str]) -> str | None:
    """None when the file manifests agree; else which files differ (graded vs here), in a few words."""
    differ = sorted(p for p in set(graded) | set(here) if graded.get(p) != here.get(p))
    return _describe(differ, graded, here) if differ else None
