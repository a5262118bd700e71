#!/usr/bin/env python3
"""Checks docker/Dockerfile against the repository without a container engine.

  docker_image_check.py <source dir> <build dir>

1. The build stage runs the README's scripts: scripts/deps.sh with the argument
   scripts/run.sh gives it, then scripts/build.sh (as run.sh does), then
   `cmake --install`.
2. The runtime image's files equal the install manifest: the install command of
   the Dockerfile is repeated here (its DESTDIR, its flags, the prefix its
   build line sets) into a temp dir, the tree that COPY --from=build takes is
   listed as the image will have it, and compared with install_manifest.txt.
3. The runtime stage installs exactly the Debian packages that own the shared
   libraries the installed ELF files need (readelf NEEDED -> dpkg -S), besides
   libc6 which debian:12 has.
4. The runtime stage runs as a non-root USER by default; the staged binary runs.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def dockerfile_stages(path):
    """[(from line, [(instruction, args)])], continuation lines joined."""
    text = open(path).read()
    text = re.sub(r"\\\n", " ", text)
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, args = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            stages.append((args.strip(), []))
        elif stages:
            stages[-1][1].append((instr, args.strip()))
    return stages


def main():
    src, build = sys.argv[1], sys.argv[2]
    stages = dockerfile_stages(os.path.join(src, "docker/Dockerfile"))
    if len(stages) != 2:
        fail(f"expected a build and a runtime stage, got {len(stages)}")
    (build_from, build_steps), (run_from, run_steps) = stages
    if not re.match(r"debian:12\S* AS build$", build_from, re.I):
        fail(f"build stage is not Debian 12 named build: {build_from}")
    if not run_from.startswith("debian:12"):
        fail(f"runtime stage is not Debian 12: {run_from}")

    # 1. The same scripts as README (scripts/run.sh: deps.sh build; build.sh).
    readme = open(os.path.join(src, "README.md")).read()
    run_sh = open(os.path.join(src, "scripts/run.sh")).read()
    for s in ("scripts/run.sh", "scripts/test.sh"):
        if s not in readme:
            fail(f"README no longer names {s}")
    m = re.search(r"^scripts/deps\.sh (\w+)$", run_sh, re.M)
    if not m or not re.search(r"^scripts/build\.sh\b", run_sh, re.M):
        fail("scripts/run.sh does not call scripts/deps.sh and scripts/build.sh")
    deps_arg = m.group(1)
    runs = [shlex.split(a) for i, a in build_steps if i == "RUN"]
    if len(runs) != 3:
        fail(f"build stage: expected 3 RUN lines (deps, build, install), got {len(runs)}")
    # `image`: run.sh's group plus the bpf backend's toolchain (deps.sh says so).
    deps_sh = open(os.path.join(src, "scripts/deps.sh")).read()
    if not re.search(r'^\s*image\) want\+=\("\$\{bpf\[@\]\}"\) ;;$', deps_sh, re.M):
        fail("scripts/deps.sh has no `image` group (the build group plus the bpf toolchain)")
    if runs[0] not in (["scripts/deps.sh", deps_arg], ["scripts/deps.sh", "image"]):
        fail(f"first RUN is not `scripts/deps.sh {deps_arg}` (as scripts/run.sh) or "
             f"`scripts/deps.sh image`: {runs[0]}")
    if runs[1][0] != "scripts/build.sh":
        fail(f"second RUN is not scripts/build.sh: {runs[1]}")
    prefix = None
    for a in runs[1][1:]:
        if a.startswith("-DCMAKE_INSTALL_PREFIX="):
            prefix = a.split("=", 1)[1]
    if prefix is None:
        fail("scripts/build.sh in the Dockerfile sets no -DCMAKE_INSTALL_PREFIX")
    inst = runs[2]
    env = {}
    while inst and re.match(r"^[A-Z_]+=", inst[0]):
        k, v = inst.pop(0).split("=", 1)
        env[k] = v
    if inst[:3] != ["cmake", "--install", "build"] or "DESTDIR" not in env:
        fail(f"third RUN is not `DESTDIR=... cmake --install build`: {runs[2]}")
    install_flags = inst[3:]
    print(f"build stage: scripts/deps.sh {runs[0][1]}; scripts/build.sh (prefix {prefix}); "
          f"DESTDIR={env['DESTDIR']} cmake --install build {' '.join(install_flags)}")

    copies = [shlex.split(a) for i, a in run_steps if i == "COPY"]
    from_build = [c for c in copies if c and c[0] == "--from=build"]
    if len(copies) != 1 or len(from_build) != 1 or len(from_build[0]) != 3:
        fail(f"runtime stage: expected exactly one `COPY --from=build <staging>/ /`, got {copies}")
    _, copy_src, copy_dst = from_build[0]
    if copy_src.rstrip("/") != env["DESTDIR"].rstrip("/"):
        fail(f"COPY takes {copy_src}, the install went to DESTDIR={env['DESTDIR']}")

    # 2. Repeat the install (the build dir may have another configured prefix:
    # --prefix makes it the Dockerfile's).
    with tempfile.TemporaryDirectory(prefix="memcg_exporter_test_deploy_") as stage:
        e = dict(os.environ, DESTDIR=stage)
        r = subprocess.run(["cmake", "--install", build, "--prefix", prefix] + install_flags,
                           env=e, capture_output=True, text=True)
        if r.returncode != 0:
            fail("cmake --install failed:\n" + r.stdout + r.stderr)
        manifest = set()
        for line in open(os.path.join(build, "install_manifest.txt")):
            line = line.strip()
            if line:  # CMake records the paths without DESTDIR
                manifest.add(line[len(stage):] if line.startswith(stage + "/") else line)
        image = set()
        for root, dirs, files in os.walk(stage):
            for f in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                rel = os.path.relpath(os.path.join(root, f), stage)
                image.add(os.path.normpath(os.path.join(copy_dst, rel)))
        print(f"install manifest: {len(manifest)} files; image (COPY {copy_src} {copy_dst}): "
              f"{len(image)} files")
        for p in sorted(image):
            print("  " + p)
        if image != manifest:
            fail(f"image and manifest differ: only in image {sorted(image - manifest)}, "
                 f"only in manifest {sorted(manifest - image)}")
        if not any(p == prefix + "/bin/memcg_exporter" for p in image):
            fail(f"{prefix}/bin/memcg_exporter is not installed")
        # The staged tree runs.
        r = subprocess.run([stage + prefix + "/bin/memcg_exporter", "--version"],
                           capture_output=True, text=True)
        if r.returncode != 0 or "memcg_exporter, version" not in r.stdout:
            fail(f"the staged binary does not run: {r.stdout}{r.stderr}")
        print("staged binary: " + r.stdout.strip())

        # 3. Runtime packages = owners of the NEEDED libraries.
        needed = set()
        for p in manifest:
            f = stage + p
            with open(f, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            out = subprocess.run(["readelf", "-d", f], capture_output=True, text=True).stdout
            needed |= set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    owners = set()
    for lib in sorted(needed):
        m = re.search(r"^\s*" + re.escape(lib) + r" \((?:libc6,)?x86-64[^)]*\) => (\S+)$",
                      cache, re.M) or re.search(r"^\s*" + re.escape(lib) + r" .*=> (\S+)$",
                                                cache, re.M)
        if not m:
            fail(f"library {lib} not found by ldconfig")
        real = os.path.realpath(m.group(1))
        r = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if r.returncode != 0:
            r = subprocess.run(["dpkg", "-S", m.group(1)], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"no Debian package owns {lib} ({real})")
        owners.add(r.stdout.split(":")[0])
    owners.discard("libc6")
    apt = set()
    for i, a in run_steps:
        if i == "RUN":
            m = re.search(r"apt-get install -y --no-install-recommends ([^&]+)", a)
            if m:
                apt |= set(m.group(1).split())
    print(f"NEEDED libraries: {len(needed)}; their packages (less libc6): {sorted(owners)}")
    print(f"runtime stage installs: {sorted(apt)}")
    if apt != owners:
        fail(f"runtime packages differ: missing {sorted(owners - apt)}, extra {sorted(apt - owners)}")

    # 4. Non-root by default.
    users = [a for i, a in run_steps if i == "USER"]
    if not users or users[-1].split(":")[0] in ("0", "root"):
        fail(f"runtime stage does not end as a non-root USER: {users}")
    print(f"default user: {users[-1]}")
    print("docker image check: ok")


if __name__ == "__main__":
    main()
