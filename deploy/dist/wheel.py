#!/usr/bin/env python3
"""Packs hookstorm as a Python wheel: `pip install`, `pipx install` and
`uv tool install` put the `hookstorm` binary on PATH and the scenario
catalog where that binary finds it, with no flag and no Python code run.

    python3 deploy/dist/wheel.py OUTDIR [--binary PATH] [--version V]
                                 [--plat TAG] [--compress-level N]
    python3 deploy/dist/wheel.py dist --binary target/dist/hookstorm

writes OUTDIR/hookstorm-VERSION-py3-none-PLAT.whl and prints its path:

    hookstorm-VERSION.data/scripts/hookstorm            the binary (mode 755)
    hookstorm-VERSION.data/data/share/hookstorm/scenarios/...   the catalog
    hookstorm-VERSION.dist-info/{METADATA,WHEEL,RECORD}

pip installs the script into the environment's bin/ and the data under its
prefix, so the binary at <prefix>/bin/hookstorm reads
<prefix>/share/hookstorm/scenarios (docs/install.md). The platform tag
comes from the binary itself: its ELF machine, and the newest GLIBC_2.N
symbol version it needs (manylinux_2_N; PyPI takes no plain linux_* tag).
The version defaults to the workspace's (Cargo.toml). The zip is
reproducible: entries sorted, dated SOURCE_DATE_EPOCH (default 1980-01-01).
Standard library only.
"""

import argparse
import base64
import hashlib
import os
import re
import sys
import time
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAME = "hookstorm"
SUMMARY = "Chaos and conformance runs against webhook receivers."
MACHINES = {0x3E: "x86_64", 0xB7: "aarch64"}


def workspace_version():
    with open(REPO / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["workspace"]["package"]["version"]


def platform_tag(binary):
    """manylinux_2_N_<arch> for a glibc-linked ELF binary."""
    data = binary.read_bytes()
    if data[:4] != b"\x7fELF":
        sys.exit(f"error: {binary} is not an ELF binary (hint: --plat TAG)")
    little = data[5] == 1
    machine = int.from_bytes(data[18:20], "little" if little else "big")
    arch = MACHINES.get(machine)
    if arch is None:
        sys.exit(f"error: {binary}: ELF machine {machine:#x} is not known here (hint: --plat TAG)")
    glibc = [int(m) for m in re.findall(rb"GLIBC_2\.(\d+)", data)]
    if not glibc:
        sys.exit(f"error: {binary} needs no glibc symbol version (static?) (hint: --plat TAG)")
    return f"manylinux_2_{max(max(glibc), 17)}_{arch}"


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def metadata(version):
    readme = (HERE / "PACKAGE.md").read_text()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "License: Apache-2.0\n"
        "Keywords: webhooks,chaos,conformance,testing,idempotency\n"
        "Classifier: Environment :: Console\n"
        "Classifier: License :: OSI Approved :: Apache Software License\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Classifier: Topic :: Software Development :: Testing\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme
    )


def build(outdir, binary, version, plat, level, catalog):
    tag = f"py3-none-{plat}"
    dist_info = f"{NAME}-{version}.dist-info"
    data_dir = f"{NAME}-{version}.data"
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]

    # (archive name, bytes, mode)
    entries = [(f"{data_dir}/scripts/{NAME}", binary.read_bytes(), 0o755)]
    for f in sorted(p for p in catalog.rglob("*") if p.is_file()):
        rel = f.relative_to(catalog).as_posix()
        entries.append((f"{data_dir}/data/share/hookstorm/scenarios/{rel}", f.read_bytes(), 0o644))
    entries.append((f"{dist_info}/METADATA", metadata(version).encode(), 0o644))
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: hookstorm deploy/dist/wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    )
    entries.append((f"{dist_info}/WHEEL", wheel.encode(), 0o644))
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d, _ in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / f"{NAME}-{version}-{tag}.whl"
    method = zipfile.ZIP_DEFLATED if level > 0 else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = method
            z.writestr(info, data, compress_type=method, compresslevel=level if level > 0 else None)
    return path


def main():
    ap = argparse.ArgumentParser(description="Packs hookstorm as a Python wheel.")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--binary", type=Path, default=REPO / "target/dist/hookstorm",
                    help="the hookstorm binary (default target/dist/hookstorm: cargo build --profile dist)")
    ap.add_argument("--version", default=None, help="the wheel's version (default: the workspace's)")
    ap.add_argument("--plat", default=None, help="platform tag (default: from the binary)")
    ap.add_argument("--compress-level", type=int, default=9, choices=range(0, 10),
                    help="deflate level, 0 stores (default 9)")
    ap.add_argument("--catalog", type=Path, default=REPO / "scenarios", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not a.binary.is_file() or not os.access(a.binary, os.X_OK):
        sys.exit(f"error: no executable {a.binary} (hint: cargo build --profile dist --bin hookstorm)")
    if not (a.catalog / "baseline.toml").is_file():
        sys.exit(f"error: no scenario catalog at {a.catalog}")
    version = a.version or workspace_version()
    plat = a.plat or platform_tag(a.binary)
    print(build(a.outdir, a.binary, version, plat, a.compress_level, a.catalog))


if __name__ == "__main__":
    main()
