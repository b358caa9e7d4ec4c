"""The ``.meta`` files of the Unity package (protocol/clients/csharp), with stable GUIDs.

Unity pairs every file and folder it imports with a ``.meta`` file holding a GUID, and
references assets by that GUID: a package whose metas change GUIDs between versions breaks
every project that references its scripts. So each GUID here is derived from the asset's path
inside the package (MD5 of ``<package name>/<path>``), and the metas are committed.

Unity skips hidden names (``.gitignore``) and folders ending in ``~`` (``Samples~``,
``Tests~``): they get no meta. Run after adding or renaming a file of the package:

    python -m tools.unity_meta          # write missing or stale metas, remove orphans
    python -m tools.unity_meta --check  # exit 1 if anything would change
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "protocol" / "clients" / "csharp"

_TAIL = "  externalObjects: {}\n  userData: \n  assetBundleName: \n  assetBundleVariant: \n"

#: The importer Unity uses, by file suffix (anything else is a DefaultImporter asset).
IMPORTERS = {
    ".cs": "MonoImporter",
    ".asmdef": "AssemblyDefinitionImporter",
    ".md": "TextScriptImporter",
    ".txt": "TextScriptImporter",
}


def skipped(rel: Path) -> bool:
    """Whether Unity ignores this path (hidden, or inside a folder whose name ends in ``~``)."""
    return any(part.startswith(".") or part.endswith("~") for part in rel.parts)


def assets(root: Path = PACKAGE) -> list[Path]:
    """Every file and folder Unity imports, relative to the package root, sorted."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if skipped(rel) or path.suffix == ".meta":
            continue
        found.append(rel)
    return found


def package_name(root: Path = PACKAGE) -> str:
    name: str = json.loads((root / "package.json").read_text(encoding="utf-8"))["name"]
    return name


def guid(rel: Path, name: str) -> str:
    """The asset's GUID: 32 hex digits, from the package name and its path (``/``-separated)."""
    return hashlib.md5(f"{name}/{rel.as_posix()}".encode(), usedforsecurity=False).hexdigest()


def importer(rel: Path, root: Path = PACKAGE) -> str:
    if (root / rel).is_dir():
        return "DefaultImporter"
    if rel.as_posix() == "package.json":
        return "PackageManifestImporter"
    return IMPORTERS.get(rel.suffix, "DefaultImporter")


def meta_text(rel: Path, root: Path = PACKAGE) -> str:
    """The ``.meta`` file Unity would write for this asset, with its stable GUID."""
    head = f"fileFormatVersion: 2\nguid: {guid(rel, package_name(root))}\n"
    if (root / rel).is_dir():
        head += "folderAsset: yes\n"
    kind = importer(rel, root)
    if kind == "MonoImporter":
        body = (
            "MonoImporter:\n  externalObjects: {}\n  serializedVersion: 2\n"
            "  defaultReferences: []\n  executionOrder: 0\n  icon: {instanceID: 0}\n"
            "  userData: \n  assetBundleName: \n  assetBundleVariant: \n"
        )
    else:
        body = f"{kind}:\n{_TAIL}"
    return head + body


def plan(root: Path = PACKAGE) -> tuple[dict[Path, str], list[Path]]:
    """The metas to write (path → text) and the orphan metas to remove."""
    wanted = {root / f"{rel.as_posix()}.meta": meta_text(rel, root) for rel in assets(root)}
    write = {
        path: text
        for path, text in wanted.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    }
    orphans = [
        p
        for p in sorted(root.rglob("*.meta"))
        if not skipped(p.relative_to(root)) and p not in wanted
    ]
    return write, orphans


def main(argv: list[str]) -> int:
    write, orphans = plan()
    if "--check" in argv:
        for path in [*write, *orphans]:
            print(f"stale: {path.relative_to(PACKAGE)}")
        return 1 if write or orphans else 0
    for path, text in write.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(PACKAGE)}")
    for path in orphans:
        path.unlink()
        print(f"removed {path.relative_to(PACKAGE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
