#!/usr/bin/env python3
"""Packs hookstorm for npm the way esbuild and biome ship a native binary:
two tarballs made with `npm pack`.

    python3 deploy/dist/npm.py OUTDIR [--binary PATH] [--version V]
    python3 deploy/dist/npm.py dist --binary target/dist/hookstorm

  hookstorm-VERSION.tgz                  the launcher: package.json (`bin`)
                                         and bin/hookstorm.js, which runs the
                                         platform package's binary
  hookstorm-linux-x64-VERSION.tgz        @hookstorm/linux-x64 (`os`, `cpu`):
                                         bin/hookstorm and scenarios/

The launcher names the platform package in `optionalDependencies`, so npm
installs the one package whose `os` and `cpu` match the machine. The
binary's catalog is scenarios/ beside its bin/, where it looks first
(docs/install.md). The platform comes from the binary (its ELF machine);
the version defaults to the workspace's (Cargo.toml). Prints the two
tarballs' paths, launcher first. Needs `npm` on PATH, no registry.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CPUS = {0x3E: "x64", 0xB7: "arm64"}


def workspace_version():
    with open(REPO / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["workspace"]["package"]["version"]


def cpu_of(binary):
    with open(binary, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        sys.exit(f"error: {binary} is not a Linux (ELF) binary")
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    if machine not in CPUS:
        sys.exit(f"error: {binary}: ELF machine {machine:#x} is not known here")
    return CPUS[machine]


def pack(folder, outdir):
    o = subprocess.run(
        ["npm", "pack", "--json", "--pack-destination", str(outdir)],
        cwd=folder, capture_output=True, text=True,
    )
    if o.returncode != 0:
        sys.exit(f"error: npm pack in {folder} failed:\n{o.stderr}")
    return outdir / json.loads(o.stdout)[0]["filename"]


def write_json(path, value):
    path.write_text(json.dumps(value, indent=2) + "\n")


def main():
    ap = argparse.ArgumentParser(description="Packs hookstorm's two npm packages.")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--binary", type=Path, default=REPO / "target/dist/hookstorm",
                    help="the hookstorm binary (default target/dist/hookstorm: cargo build --profile dist)")
    ap.add_argument("--version", default=None, help="the packages' version (default: the workspace's)")
    ap.add_argument("--catalog", type=Path, default=REPO / "scenarios", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not a.binary.is_file() or not os.access(a.binary, os.X_OK):
        sys.exit(f"error: no executable {a.binary} (hint: cargo build --profile dist --bin hookstorm)")
    if not (a.catalog / "baseline.toml").is_file():
        sys.exit(f"error: no scenario catalog at {a.catalog}")
    version = a.version or workspace_version()
    cpu = cpu_of(a.binary)
    platform = f"@hookstorm/linux-{cpu}"
    outdir = a.outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="hookstorm-npm-") as stage:
        stage = Path(stage)
        readme = HERE / "PACKAGE.md"

        launcher = stage / "hookstorm"
        shutil.copytree(HERE / "npm/hookstorm", launcher)
        shutil.copy(readme, launcher / "README.md")
        manifest = json.loads((launcher / "package.json").read_text())
        manifest["version"] = version
        manifest["optionalDependencies"] = {platform: version}
        write_json(launcher / "package.json", manifest)
        os.chmod(launcher / "bin/hookstorm.js", 0o755)

        native = stage / "platform"
        (native / "bin").mkdir(parents=True)
        manifest = json.loads((HERE / "npm/platform/package.json").read_text())
        manifest.update(
            name=platform,
            version=version,
            cpu=[cpu],
            description=manifest["description"].replace("x64", cpu),
        )
        write_json(native / "package.json", manifest)
        shutil.copy(readme, native / "README.md")
        shutil.copy(a.binary, native / "bin/hookstorm")
        os.chmod(native / "bin/hookstorm", 0o755)
        shutil.copytree(a.catalog, native / "scenarios")

        print(pack(launcher, outdir))
        print(pack(native, outdir))


if __name__ == "__main__":
    main()
