#!/usr/bin/env bash
# Checks docker/Dockerfile and deploy/docker-compose.yml without a Docker engine:
# `docker-compose config` must accept the compose file; the resolved services must
# match the party layout and keep each identity's key and data to itself; every path
# a daemon's config names must lie on one of its mounts; every file the Dockerfile
# copies must exist (and not be excluded by .dockerignore); the runtime stage must
# install every library the built binaries link and run as a non-root user.
# (The configs themselves are loaded by the real loaders in compose_config_test.)
set -euo pipefail
BIN="$1"; SRC="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v docker-compose > /dev/null || fail "docker-compose is missing (deploy/install-deps.sh installs it)"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

docker-compose -f "$SRC/deploy/docker-compose.yml" config > "$WORK/resolved.yml" 2> "$WORK/config.err" \
  || { cat "$WORK/config.err"; fail "docker-compose config rejected deploy/docker-compose.yml"; }

# Shared libraries of the built binaries (the packages shipping them are looked up below).
for binary in vfsynth vfsynth-curator vfsynth-party; do
  [ -x "$BIN/$binary" ] || fail "$BIN/$binary is not built"
  ldd "$BIN/$binary" | awk '/=> \//{print $3}'
done | sort -u > "$WORK/linked-libraries"

python3 - "$SRC" "$WORK/resolved.yml" "$WORK/linked-libraries" <<'PY' || fail "see above"
import json, os, re, subprocess, sys, fnmatch
import yaml

src, resolved, linked_path = sys.argv[1:4]
errors = []
def check(cond, message):
    if not cond:
        errors.append(message)

# ---- compose ----
compose = yaml.safe_load(open(resolved))
services = compose["services"]
layout = json.load(open(os.path.join(src, "deploy/parties/adult-3.json")))
parties = [p["name"] for p in layout["parties"]]
check(set(services) == {"cert-init", "data-init", "curator", *parties},
      f"services {sorted(services)} are not cert-init, data-init, curator + {parties}")

def mounts(service):
    out = []
    for v in services[service].get("volumes", []):
        source, target, mode = (v.split(":") + ["rw"])[:3]
        out.append((source, target, mode))
    return out

def host_config(service):
    for source, target, _ in mounts(service):
        if target.startswith("/etc/vfsynth/") and target.endswith(".json"):
            return json.load(open(source)), target
    errors.append(f"{service}: no config JSON mounted under /etc/vfsynth")
    return None, None

def on_mount(service, path, writable=False):
    for source, target, mode in mounts(service):
        if path == target or path.startswith(target.rstrip("/") + "/"):
            return not writable or mode == "rw"
    return False

curator_config, _ = host_config("curator")
curator_port = curator_config["listen"].rsplit(":", 1)[1]
for name in ["curator", *parties]:
    svc = services[name]
    check(str(svc.get("user", "")) not in ("0", "root"), f"{name} runs as root")
    binary = "vfsynth-curator" if name == "curator" else "vfsynth-party"
    config, target = host_config(name)
    if config is None:
        continue
    check(svc["command"] == [binary, "--config", target], f"{name}: command {svc['command']}")
    tls = config["tls"]
    for key in ("ca", "cert", "key"):
        check(on_mount(name, tls[key]), f"{name}: tls.{key} {tls[key]} is on no mount")
    stem = "curator" if name == "curator" else name
    check(tls["key"].endswith(f"/{stem}.key"), f"{name}: uses key {tls['key']}")
    check(on_mount(name, "/var/lib/vfsynth/checkpoints", writable=True),
          f"{name}: no writable checkpoints volume")
    deps = svc.get("depends_on", {})
    check(deps.get("cert-init", {}).get("condition") == "service_completed_successfully",
          f"{name} does not wait for cert-init")
    if name == "curator":
        check(config["parties"] == parties, f"curator roster {config['parties']} != layout {parties}")
        check(on_mount(name, config["output"]["synthetic_csv"], writable=True),
              "curator: synthetic_csv is on no writable mount")
        check(not any(s == "party-secrets" for s, _, _ in mounts(name)), "curator mounts the party secrets")
        check(config["listen"].rsplit(":", 1)[1] == curator_port, f"curator listens on {config['listen']}")
        check(any(p.split("/")[0].endswith(":" + curator_port) for p in svc.get("ports", [])),
              f"curator does not publish port {curator_port}")
    else:
        check(config["name"] == name, f"{name}: config names {config['name']}")
        check(config["curator"] == f"curator:{curator_port}", f"{name}: dials {config['curator']}")
        check(config["privacy"]["mode"] == curator_config["privacy"]["mode"],
              f"{name}: privacy mode differs from the curator's")
        for key in ("data", "schema", "secrets"):
            check(on_mount(name, config[key]), f"{name}: {key} {config[key]} is on no mount")
        check(on_mount(name, config["privacy"]["ledger"], writable=True),
              f"{name}: the ledger is on no writable mount")
        check(deps.get("data-init", {}).get("condition") == "service_completed_successfully",
              f"{name} does not wait for data-init")
        check(f"{name}-data" in [s for s, _, _ in mounts("data-init")], f"data-init does not fill {name}-data")

# Each identity's key volume is mounted by cert-init and by that identity only.
for volume in ["pki", "curator-tls", *[f"{p}-tls" for p in parties], *[f"{p}-data" for p in parties]]:
    users = sorted(n for n in services if any(s == volume for s, _, _ in mounts(n)))
    owner = volume.rsplit("-", 1)[0]
    expected = sorted({"cert-init" if volume.endswith("tls") or volume == "pki" else "data-init"} |
                      ({owner} if volume != "pki" else set()))
    check(users == expected, f"volume {volume} is mounted by {users}, expected {expected}")
check(set(compose.get("volumes", {})) >= {s for n in services for s, _, _ in mounts(n) if not s.startswith("/")},
      "a named volume is used but not declared")
init_env = services["cert-init"]["environment"]["VFSYNTH_PARTIES"].split()
check(init_env == parties, f"cert-init makes certificates for {init_env}, layout has {parties}")

# ---- Dockerfile ----
dockerfile = open(os.path.join(src, "docker/Dockerfile")).read()
lines = re.sub(r"\\\n", " ", dockerfile).splitlines()
lines = [l.strip() for l in lines if l.strip() and not l.strip().startswith("#")]
stages = [l for l in lines if l.startswith("FROM ")]
check(len(stages) == 2, f"expected a build and a runtime stage, got {stages}")
check(all("bookworm" in s for s in stages), f"stages not on Debian bookworm: {stages}")
ignore = [l.strip() for l in open(os.path.join(src, ".dockerignore")) if l.strip() and not l.startswith("#")]
def ignored(path):
    return any(fnmatch.fnmatch(path, pat) or path.startswith(pat.rstrip("/") + "/") for pat in ignore)
built = set()
runtime_files = set()
final_stage = False
for l in lines:
    if l.startswith("FROM "):
        final_stage = " AS runtime" in l or " as runtime" in l
    if l.startswith("RUN") and "cmake --build" in l:
        built |= set(l.split("--target", 1)[1].split()) if "--target" in l else set()
    if not l.startswith("COPY "):
        continue
    words = [w for w in l.split()[1:] if not w.startswith("--chown")]
    from_stage = words[0].startswith("--from=")
    if from_stage:
        words = words[1:]
    sources, dest = words[:-1], words[-1]
    for s in sources:
        if from_stage:
            check(os.path.basename(s) in built, f"COPY --from copies {s}, which the build stage does not build")
        else:
            check(os.path.exists(os.path.join(src, s)), f"COPY source {s} does not exist")
            check(not ignored(s), f"COPY source {s} is excluded by .dockerignore")
        if final_stage:
            runtime_files.add(os.path.join(dest, os.path.basename(s)) if dest.endswith("/") else dest)
check("deploy/install-deps.sh --build-only" in dockerfile, "the build stage does not run deploy/install-deps.sh")
check("-DVFSYNTH_BUILD_TESTS=OFF" in dockerfile and not any(l.startswith("COPY tests") for l in lines),
      "the image builds the tests")
user = [l.split()[1] for l in lines if l.startswith("USER ")]
check(user and user[-1] not in ("root", "0"), f"final USER is {user}")
for name in ("cert-init", "data-init"):
    script = services[name]["command"][0]
    check(any(script == f or script.startswith(f.rstrip("/") + "/") for f in runtime_files) or
          any(f.endswith("/") and script.startswith(f) for f in runtime_files),
          f"{name} runs {script}, which the image does not contain")
for target in ["/var/lib/vfsynth/" + d for d in ("tls", "data", "secrets", "output", "checkpoints")] + ["/etc/vfsynth"]:
    check(target in dockerfile, f"the image does not create the mount point {target}")

# Runtime packages: their dependency closure must ship every linked library.
install = re.search(r"apt-get install -y --no-install-recommends ([^&]*)&&", " ".join(lines[lines.index(next(l for l in lines if "AS runtime" in l)):]))
check(install is not None, "the runtime stage installs no packages")
if install:
    wanted = install.group(1).split()
    closure = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                              "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *wanted],
                             capture_output=True, text=True, check=True).stdout
    have = {l.strip().split(":")[-1].strip() for l in closure.splitlines()}
    have |= set(wanted)
    # One dpkg call for all libraries; usrmerge: dpkg may know a file under /lib, not /usr/lib.
    libs = open(linked_path).read().split()
    candidates = {lib: {lib, os.path.realpath(lib)} for lib in libs}
    for lib in libs:
        candidates[lib] |= {c[len("/usr"):] for c in candidates[lib] if c.startswith("/usr/")}
    owners = {}
    search = subprocess.run(["dpkg", "-S", *sorted(set().union(*candidates.values()))],
                            capture_output=True, text=True).stdout
    for line in search.splitlines():
        pkg, path = line.split(": ", 1)
        owners[path] = pkg.split(":")[0]
    linked = set()
    for lib in libs:
        pkg = next((owners[c] for c in candidates[lib] if c in owners), None)
        check(pkg is not None, f"linked library {lib} comes from no Debian package")
        if pkg:
            linked.add(pkg)
    for pkg in sorted(linked):
        check(pkg in have, f"runtime stage lacks {pkg} (linked by the binaries)")
    for pkg in wanted:
        check(not pkg.endswith("-dev"), f"runtime stage installs the development package {pkg}")

if errors:
    print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
print(f"compose: {len(services)} services; Dockerfile: {len(runtime_files)} runtime files; "
      f"{len(open(linked_path).read().split())} linked libraries covered")
PY
echo PASS
