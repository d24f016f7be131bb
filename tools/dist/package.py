"""Packs one build of the two native libraries, the sandbox worker and the
confinement launcher into what a user installs: the Python wheel and the two
npm tarballs (the main package and the platform package that carries the
`.node`, the worker and the launcher, chosen through `optionalDependencies`,
as napi-rs lays them out). The worker and the launcher go in `bin/` beside
the native library, where the runtime looks for them.

It compiles nothing: `make dist` gives it the release build (linked by zig
against glibc 2.17, then `auditwheel repair` sets the manylinux tag), and
`make test-dist` the debug build that the other tests already made, so both
go through the same packing. Metadata comes from bindings-python/pyproject.toml
(as maturin reads it for the sdist) and bindings-node/package.json.

    package.py --profile release|debug --out DIR [--plat linux_x86_64]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import tomllib

ROOT = Path(__file__).resolve().parents[2]
PY_DIR = ROOT / "bindings-python"
NODE_DIR = ROOT / "bindings-node"
WORKER = "harnessweaver-sandbox"
LAUNCHER = "harnessweaver-confine"

# napi-rs's names for a Rust target: (npm platform suffix, package.json os, cpu, libc).
NAPI_PLATFORMS = {
    "x86_64-unknown-linux-gnu": ("linux-x64-gnu", "linux", "x64", "glibc"),
    "aarch64-unknown-linux-gnu": ("linux-arm64-gnu", "linux", "arm64", "glibc"),
}


def host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def version() -> str:
    """The one version: the workspace's, which maturin also gives the sdist."""
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
    return str(cargo["workspace"]["package"]["version"])


def built(triple: str, profile: str) -> Dict[str, Path]:
    """The files of one build; a missing one names the make target that builds it."""
    lib = ROOT / "target" / triple / profile
    files = {
        "python": (lib / "libharnessweaver_python.so", "build-python"),
        "node": (lib / "libharnessweaver_node.so", "build-node"),
        "worker": (ROOT / "target" / "sandbox-worker" / triple / profile / WORKER, "build-sandbox"),
        "launcher": (lib / LAUNCHER, "build-confine"),
    }
    missing = [f"{path} (make {target})" for path, target in files.values() if not path.is_file()]
    if missing:
        sys.exit("package.py: not built: " + ", ".join(missing))
    return {name: path for name, (path, _) in files.items()}


def stripped(src: Path, into: Path) -> Path:
    """A copy of `src` without symbols (what a user needs to run it)."""
    into.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, into)
    subprocess.run(["strip", "--strip-unneeded", str(into)], check=True)
    into.chmod(0o755)
    return into


# ---------------------------------------------------------------- the wheel


def metadata(project: Dict[str, Any], ver: str) -> str:
    """METADATA (core metadata 2.4) from pyproject.toml's [project] table."""
    lines = [
        "Metadata-Version: 2.4",
        f"Name: {project['name']}",
        f"Version: {ver}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
        f"License-Expression: {project['license']}",
    ]
    lines += [f"License-File: {Path(f).name}" for f in project.get("license-files", [])]
    lines += [f"Keywords: {','.join(project['keywords'])}"] if project.get("keywords") else []
    lines += [f"Author: {a['name']}" for a in project.get("authors", [])]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Project-URL: {k}, {v}" for k, v in project.get("urls", {}).items()]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = PY_DIR / project["readme"]
    lines.append("Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM")
    return "\n".join(lines) + "\n\n" + readme.read_text(encoding="utf-8")


def wheel_files(
    project: Dict[str, Any], ver: str, tag: str, libs: Dict[str, Path], work: Path
) -> Iterator[Tuple[str, Path | bytes, int]]:
    """(path in the wheel, file or bytes, mode) of every file but RECORD."""
    package = PY_DIR / "python" / "harnessweaver"
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".so", ".pyc"}:
            yield f"harnessweaver/{path.relative_to(package).as_posix()}", path, 0o644
    yield "harnessweaver/_native.abi3.so", stripped(libs["python"], work / "py" / "_native.abi3.so"), 0o755
    yield f"harnessweaver/bin/{WORKER}", stripped(libs["worker"], work / "py" / WORKER), 0o755
    yield f"harnessweaver/bin/{LAUNCHER}", stripped(libs["launcher"], work / "py" / LAUNCHER), 0o755
    info = f"{project['name']}-{ver}.dist-info"
    yield f"{info}/METADATA", metadata(project, ver).encode(), 0o644
    wheel = f"Wheel-Version: 1.0\nGenerator: harnessweaver tools/dist/package.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
    yield f"{info}/WHEEL", wheel.encode(), 0o644
    scripts = "".join(f"{name} = {target}\n" for name, target in project.get("scripts", {}).items())
    yield f"{info}/entry_points.txt", f"[console_scripts]\n{scripts}".encode(), 0o644
    for lic in project.get("license-files", []):
        yield f"{info}/licenses/{Path(lic).name}", (PY_DIR / lic).resolve(), 0o644


def build_wheel(libs: Dict[str, Path], plat: str, out: Path, work: Path) -> Path:
    project = tomllib.loads((PY_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    ver = version()
    abi3 = project["requires-python"].removeprefix(">=").replace(".", "")
    tag = f"cp{abi3}-abi3-{plat}"
    target = out / f"{project['name']}-{ver}-{tag}.whl"
    record: List[str] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, source, mode in wheel_files(project, ver, tag, libs, work):
            data = source if isinstance(source, bytes) else source.read_bytes()
            entry = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = (stat.S_IFREG | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(entry, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record_name = f"{project['name']}-{ver}.dist-info/RECORD"
        record.append(f"{record_name},,")
        whl.writestr(zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return target


# ---------------------------------------------------------------- npm


def npm_pack(staging: Path, out: Path) -> Path:
    done = subprocess.run(
        ["npm", "pack", "--json", "--pack-destination", str(out.resolve())],
        cwd=staging,
        check=True,
        capture_output=True,
        text=True,
    )
    return out / json.loads(done.stdout)[0]["filename"]


def platform_package(main: Dict[str, Any], triple: str, libs: Dict[str, Path], staging: Path) -> Dict[str, Any]:
    """The per-platform package: the `.node`, and the worker and the launcher
    in `bin/`, where the runtime looks beside the loaded library."""
    suffix, os_name, cpu, libc = NAPI_PLATFORMS[triple]
    binary = f"{main['napi']['binaryName']}.{suffix}.node"
    stripped(libs["node"], staging / binary)
    stripped(libs["worker"], staging / "bin" / WORKER)
    stripped(libs["launcher"], staging / "bin" / LAUNCHER)
    package = {
        "name": f"{main['name']}-{suffix}",
        "version": main["version"],
        "description": f"The {triple} binary of {main['name']}: its native addon, sandbox worker and confinement launcher. Install `{main['name']}`, which depends on this.",
        "license": main["license"],
        "main": binary,
        "files": [binary, "bin/"],
        "os": [os_name],
        "cpu": [cpu],
        "libc": [libc],
        "engines": main["engines"],
        **{k: main[k] for k in ("repository", "homepage", "bugs") if k in main},
    }
    (staging / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    shutil.copyfile(ROOT / "LICENSE", staging / "LICENSE")
    (staging / "README.md").write_text(
        f"# {package['name']}\n\nThe `{triple}` native addon, `{WORKER}` worker and `{LAUNCHER}` launcher of "
        f"[`{main['name']}`](https://www.npmjs.com/package/{main['name']}). Install `{main['name']}`; "
        "npm picks this package through its `optionalDependencies`.\n"
    )
    return package


def main_package(main: Dict[str, Any], platform: Dict[str, Any], staging: Path) -> None:
    """The main package: JavaScript, types and the command line; the binary
    comes from the platform package."""
    for entry in main["files"]:
        src = NODE_DIR / entry.rstrip("/")
        if src.is_dir():
            shutil.copytree(src, staging / entry.rstrip("/"), ignore=shutil.ignore_patterns("*.node", "node_modules"))
        elif src.is_file():
            shutil.copyfile(src, staging / entry)
        else:
            sys.exit(f"package.py: bindings-node/package.json lists `{entry}`, which does not exist")
    published = {k: v for k, v in main.items() if k not in {"devDependencies", "scripts"}}
    published["optionalDependencies"] = {platform["name"]: platform["version"]}
    (staging / "package.json").write_text(json.dumps(published, indent=2) + "\n")
    shutil.copyfile(ROOT / "README.md", staging / "README.md")
    shutil.copyfile(ROOT / "LICENSE", staging / "LICENSE")
    for path in (staging / "bin").glob("*.js"):
        path.chmod(0o755)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=["release", "debug"], required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--plat", default="linux_x86_64", help="the wheel's platform tag before auditwheel")
    args = parser.parse_args(argv)
    triple = host_triple()
    if triple not in NAPI_PLATFORMS:
        sys.exit(f"package.py: no npm platform package is defined for {triple}")
    libs = built(triple, args.profile)
    args.out.mkdir(parents=True, exist_ok=True)
    node = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="hw-dist-") as tmp:
        work = Path(tmp)
        made = [build_wheel(libs, args.plat, args.out, work)]
        (work / "platform").mkdir()
        (work / "main").mkdir()
        platform = platform_package(node, triple, libs, work / "platform")
        main_package(node, platform, work / "main")
        made += [npm_pack(work / "platform", args.out), npm_pack(work / "main", args.out)]
    for path in made:
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
