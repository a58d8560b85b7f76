#!/usr/bin/env python3
"""Checks the rendered Kubernetes manifests of deploy/k8s (kubectl kustomize output).

  k8s_manifests.py check SRC RENDER_DIR       exit 1 naming every violation
  k8s_manifests.py self-test SRC RENDER_DIR   every known bad edit of a rendered copy is refused

RENDER_DIR holds curator.yaml and <party>.yaml for each party of
deploy/parties/adult-3.json. What must hold: each daemon reads the JSON config kept
beside its kustomization, which matches the compose one but for the addresses; every
path the config names lies on the right kind of volume (keys and secrets on read-only
secret volumes of mode 0400, ledgers and checkpoints on writable PVCs); ports agree
between configs, containers, probes, the Service and the network policies; every
container runs the project's image as uid 10001 without privileges, with resource
requests and limits.
"""
import copy
import json
import os
import re
import sys

import yaml

UID = 10001
SECRET_MODE = 0o400
DNS_PORT = 53


class Manifests:
    """One overlay's rendered objects."""

    def __init__(self, name, docs):
        self.name = name
        self.docs = [d for d in docs if d]

    def all(self, kind):
        return [d for d in self.docs if d["kind"] == kind]

    def one(self, kind, name):
        found = [d for d in self.all(kind) if d["metadata"]["name"] == name]
        return found[0] if len(found) == 1 else None


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def under(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


class Checker:
    def __init__(self, src):
        self.src = src
        self.errors = []
        layout = json.load(open(os.path.join(src, "deploy/parties/adult-3.json")))
        self.parties = [p["name"] for p in layout["parties"]]
        dockerfile = open(os.path.join(src, "docker/Dockerfile")).read()
        self.dockerfile = re.sub(r"\\\n", " ", dockerfile)
        uid = re.search(r"ARG VFSYNTH_UID=(\d+)", dockerfile)
        self.image_uid = int(uid.group(1)) if uid else None

    def check(self, cond, message):
        if not cond:
            self.errors.append(message)
        return cond

    # ---- pods ----
    def pod_spec(self, obj):
        return obj["spec"]["template"]["spec"]

    def check_pod(self, where, obj):
        spec = self.pod_spec(obj)
        ctx = spec.get("securityContext", {})
        self.check(self.image_uid == UID, f"docker/Dockerfile's uid is {self.image_uid}, not {UID}")
        self.check(ctx.get("runAsNonRoot") is True, f"{where}: runAsNonRoot is not true")
        self.check(ctx.get("runAsUser") == UID, f"{where}: runAsUser {ctx.get('runAsUser')}, not the image's {UID}")
        self.check(ctx.get("fsGroup") == UID, f"{where}: fsGroup {ctx.get('fsGroup')}: the secret files would be unreadable")
        self.check(spec.get("automountServiceAccountToken") is False, f"{where}: mounts a service account token")
        for host in ("hostNetwork", "hostPID", "hostIPC"):
            self.check(not spec.get(host), f"{where}: {host}")
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for v in volumes.values():
            self.check("hostPath" not in v, f"{where}: volume {v['name']} is a hostPath")
            if "secret" in v:
                mode = v["secret"].get("defaultMode")
                self.check(mode == SECRET_MODE and not any("mode" in i for i in v["secret"].get("items", [])),
                           f"{where}: secret volume {v['name']} has defaultMode {mode}, not 0400 (256)")
        for c in spec.get("initContainers", []) + spec["containers"]:
            self.check_container(f"{where} container {c['name']}", c, volumes)

    def check_container(self, where, c, volumes):
        self.check(re.fullmatch(r"(.+/)?vfsynth(:[\w.-]+)?", c.get("image", "")) is not None,
                   f"{where}: image {c.get('image')} is not the vfsynth image docker/Dockerfile builds")
        sc = c.get("securityContext", {})
        self.check(sc.get("privileged") is not True, f"{where}: privileged")
        self.check(sc.get("allowPrivilegeEscalation") is False, f"{where}: allowPrivilegeEscalation is not false")
        self.check("ALL" in sc.get("capabilities", {}).get("drop", []), f"{where}: does not drop all capabilities")
        self.check(not sc.get("capabilities", {}).get("add"), f"{where}: adds capabilities")
        self.check(sc.get("runAsUser", UID) == UID, f"{where}: runs as uid {sc.get('runAsUser')}")
        resources = c.get("resources", {})
        for kind in ("requests", "limits"):
            for resource in ("cpu", "memory"):
                self.check(resource in resources.get(kind, {}), f"{where}: no {resource} in resources.{kind}")
        for m in c.get("volumeMounts", []):
            v = volumes.get(m["name"])
            if not self.check(v is not None, f"{where}: mounts the undeclared volume {m['name']}"):
                continue
            if "secret" in v or "configMap" in v:
                self.check(m.get("readOnly") is True, f"{where}: {m['name']} at {m['mountPath']} is not mounted read-only")
            if "emptyDir" in v:
                self.check(m["mountPath"] == "/tmp", f"{where}: emptyDir {m['name']} at {m['mountPath']} (only /tmp may be scratch)")

    def volume_for(self, obj, container, path):
        """The (volume, mount) of `container` that holds `path`, the deepest mount first."""
        volumes = {v["name"]: v for v in self.pod_spec(obj).get("volumes", [])}
        mounts = sorted(container.get("volumeMounts", []), key=lambda m: -len(m["mountPath"]))
        for m in mounts:
            if under(path, m["mountPath"]):
                return volumes.get(m["name"], {}), m
        return None, None

    def on(self, where, obj, container, path, kind, writable=False):
        volume, mount = self.volume_for(obj, container, path)
        if not self.check(volume is not None, f"{where}: {path} is on no volume"):
            return None
        ok = self.check(kind in volume, f"{where}: {path} is on {mount['name']} ({', '.join(k for k in volume if k != 'name')}), not a {kind}")
        if ok and writable:
            self.check(not mount.get("readOnly"), f"{where}: {path} is on a read-only mount")
        return volume

    def on_claim(self, where, m, obj, container, path, writable=False):
        volume = self.on(where, obj, container, path, "persistentVolumeClaim", writable)
        if volume and "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            self.check(m.one("PersistentVolumeClaim", claim) is not None,
                       f"{where}: {path} is on claim {claim}, which the overlay does not create")
            return claim
        return None

    # ---- configs ----
    def config_of(self, m, deployment, binary):
        where = f"{m.name}: deployment {deployment['metadata']['name']}"
        container = self.pod_spec(deployment)["containers"][0]
        args = container.get("command", []) + container.get("args", [])
        if not self.check(len(args) == 3 and args[0] == binary and args[1] == "--config",
                          f"{where}: runs {args}, not {binary} --config FILE"):
            return None, None
        path = args[2]
        volume, mount = self.volume_for(deployment, container, path)
        if not self.check(volume is not None and "configMap" in volume, f"{where}: config {path} is on no ConfigMap"):
            return None, None
        cm = m.one("ConfigMap", volume["configMap"]["name"])
        key = os.path.relpath(path, mount["mountPath"])
        if not self.check(cm is not None and key in cm.get("data", {}), f"{where}: ConfigMap has no {key}"):
            return None, None
        return json.loads(cm["data"][key]), container

    def compare(self, where, config, kept_path, compose_path, may_differ):
        kept = json.load(open(os.path.join(self.src, kept_path)))
        self.check(config == kept, f"{where}: the ConfigMap's config is not {kept_path}")
        compose = json.load(open(os.path.join(self.src, compose_path)))
        for key in sorted(set(config) | set(compose)):
            if key not in may_differ:
                self.check(config.get(key) == compose.get(key),
                           f"{where}: {key} {config.get(key)!r} differs from {compose_path}'s {compose.get(key)!r}")

    # ---- the curator ----
    def check_curator(self, m):
        deployment = m.one("Deployment", "vfsynth-curator")
        if not self.check(deployment is not None, "curator: no Deployment vfsynth-curator"):
            return None
        self.check_deployment(m, deployment)
        config, container = self.config_of(m, deployment, "vfsynth-curator")
        if config is None:
            return None
        self.compare("curator", config, "deploy/k8s/curator/curator.json", "deploy/compose/curator.json",
                     {"run_id", "health_listen"})
        self.check(config.get("parties") == self.parties, f"curator: roster {config.get('parties')}, layout {self.parties}")
        for key in ("ca", "cert", "key"):
            self.on(f"curator tls.{key}", deployment, container, config["tls"][key], "secret")
        self.on_claim("curator checkpoint_dir", m, deployment, container, config["checkpoint_dir"], writable=True)
        self.on_claim("curator output.synthetic_csv", m, deployment, container, config["output"]["synthetic_csv"], writable=True)

        ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
        listen, health = port_of(config["listen"]), config.get("health_listen")
        self.check(ports.get("grpc") == listen, f"curator: containerPort grpc {ports.get('grpc')}, config listens on {listen}")
        if self.check(health, "curator: no health_listen, so the kubelet cannot probe it"):
            health = port_of(health)
            self.check(ports.get("health") == health, f"curator: containerPort health {ports.get('health')}, health_listen {health}")
            for probe in ("readinessProbe", "livenessProbe"):
                p = container.get(probe, {})
                port = p.get("grpc", {}).get("port")
                self.check(ports.get(port, port) == health and set(p) & {"httpGet", "tcpSocket", "exec"} == set(),
                           f"curator: {probe} is not a grpc probe of the health port {health}")
        service = m.one("Service", "vfsynth-curator")
        exposed = None
        if self.check(service is not None, "curator: no Service vfsynth-curator"):
            spec = service["spec"]
            self.check(spec.get("type") == "LoadBalancer", f"curator: Service type {spec.get('type')} (the parties need a TLS-passthrough endpoint)")
            self.check(spec.get("selector") == deployment["spec"]["selector"]["matchLabels"], "curator: Service selects other pods")
            targets = [ports.get(p.get("targetPort"), p.get("targetPort", p["port"])) for p in spec["ports"]]
            self.check(targets == [listen], f"curator: Service targets ports {targets}, not only the run's {listen}")
            self.check(all(p.get("protocol", "TCP") == "TCP" for p in spec["ports"]), "curator: Service port not TCP")
            exposed = spec["ports"][0]["port"] if len(spec["ports"]) == 1 else None
        for ingress in m.all("Ingress"):
            annotations = ingress["metadata"].get("annotations", {})
            self.check(annotations.get("nginx.ingress.kubernetes.io/ssl-passthrough") == "true",
                       f"curator: Ingress {ingress['metadata']['name']} would end TLS before the daemon")
        policy = m.one("NetworkPolicy", "vfsynth-curator")
        if self.check(policy is not None, "curator: no NetworkPolicy"):
            spec = policy["spec"]
            open_ports = [p.get("port") for rule in spec.get("ingress", []) for p in rule.get("ports", [None])]
            self.check(open_ports == [listen], f"curator: NetworkPolicy lets in ports {open_ports}, not only {listen}")
            self.check(spec.get("egress") == [] and "Egress" in spec.get("policyTypes", []),
                       "curator: NetworkPolicy lets the curator dial out")
        return {"namespace": deployment["metadata"].get("namespace"), "port": exposed, "config": config}

    # ---- a party ----
    def check_party(self, name, m, curator):
        deployment = m.one("Deployment", "vfsynth-party")
        if not self.check(deployment is not None, f"{name}: no Deployment vfsynth-party"):
            return None
        self.check_deployment(m, deployment)
        config, container = self.config_of(m, deployment, "vfsynth-party")
        if config is None:
            return None
        self.compare(name, config, f"deploy/k8s/party/{name}/{name}.json", f"deploy/compose/{name}.json", {"curator"})
        self.check(config.get("name") == name, f"{name}: config names {config.get('name')}")
        if curator:
            self.check(port_of(config["curator"]) == curator["port"],
                       f"{name}: dials port {port_of(config['curator'])}, the curator's Service serves {curator['port']}")
            self.check(config["privacy"]["mode"] == curator["config"]["privacy"]["mode"], f"{name}: privacy mode differs from the curator's")
        for key in ("ca", "cert", "key"):
            self.on(f"{name} tls.{key}", deployment, container, config["tls"][key], "secret")
        self.check(config["tls"]["key"].endswith(f"/{name}.key"), f"{name}: uses key {config['tls']['key']}")
        self.on(f"{name} secrets", deployment, container, config["secrets"], "secret")
        data_claim = self.on_claim(f"{name} data", m, deployment, container, config["data"])
        self.on_claim(f"{name} schema", m, deployment, container, config["schema"])
        self.on_claim(f"{name} privacy.ledger", m, deployment, container, config["privacy"]["ledger"], writable=True)
        self.on_claim(f"{name} checkpoint_dir", m, deployment, container, config["checkpoint_dir"], writable=True)
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            self.check(probe not in container or "exec" in container[probe],
                       f"{name}: {probe} probes a port, but a party serves none")

        volumes = self.pod_spec(deployment)["volumes"]
        cm = next((m.one("ConfigMap", v["configMap"]["name"]) for v in volumes if "configMap" in v), None)
        self.check(cm is not None and cm["data"].get("party") == name, f"{name}: ConfigMap key 'party' is not {name}")
        self.check_data_prep(name, m, config, data_claim, cm)

        policy = m.one("NetworkPolicy", "vfsynth-party")
        if self.check(policy is not None, f"{name}: no NetworkPolicy"):
            spec = policy["spec"]
            self.check(spec.get("podSelector") == {} and spec.get("ingress") == [] and
                       set(spec.get("policyTypes", [])) == {"Ingress", "Egress"},
                       f"{name}: NetworkPolicy does not cover every pod in both directions")
            curator_port = port_of(config["curator"])
            reaches = set()
            for rule in spec.get("egress", []):
                ports = [(p.get("protocol", "TCP"), p.get("port")) for p in rule.get("ports", [])]
                if not self.check(ports and rule.get("to"), f"{name}: an egress rule allows every port or peer"):
                    continue
                for proto, port in ports:
                    self.check(port in (curator_port, DNS_PORT), f"{name}: egress to port {port} ({proto})")
                    reaches.add(port)
            self.check(curator_port in reaches, f"{name}: egress does not allow the curator's port {curator_port}")
        namespace = deployment["metadata"].get("namespace")
        self.check(all(d["metadata"].get("namespace") == namespace for d in m.docs),
                   f"{name}: objects outside its namespace {namespace}")
        return namespace

    def check_data_prep(self, name, m, config, data_claim, cm):
        job = m.one("Job", "vfsynth-data-prep")
        if not self.check(job is not None, f"{name}: no data-prep Job"):
            return
        self.check_pod(f"{name}: job", job)
        spec = self.pod_spec(job)
        self.check(spec.get("restartPolicy") in ("Never", "OnFailure"), f"{name}: job restartPolicy {spec.get('restartPolicy')}")
        container = spec["containers"][0]
        script = container["command"][0]
        copied = re.findall(r"^COPY\s+(.*)$", self.dockerfile, re.M)
        self.check(any(script.endswith("/" + os.path.basename(s)) and script.startswith(line.split()[-1].rstrip("/"))
                       for line in copied for s in line.split()[:-1]),
                   f"{name}: the Job runs {script}, which docker/Dockerfile does not copy there")
        env = {e["name"]: e for e in container.get("env", [])}
        ref = env.get("VFSYNTH_PARTIES", {}).get("valueFrom", {}).get("configMapKeyRef", {})
        self.check(cm is not None and ref.get("name") == cm["metadata"]["name"] and ref.get("key") == "party",
                   f"{name}: the Job does not take its party from the config's ConfigMap")
        data_dir = env.get("DATA_DIR", {}).get("value")
        self.check(data_dir == os.path.dirname(config["data"]) == os.path.dirname(config["schema"]),
                   f"{name}: the Job fills {data_dir}, the party reads {config['data']}")
        if data_dir:
            claim = self.on_claim(f"{name}: job DATA_DIR", m, job, container, data_dir, writable=True)
            self.check(claim == data_claim, f"{name}: the Job fills claim {claim}, the party reads {data_claim}")
        self.check(os.path.basename(config["data"]) == f"{name}.csv" and
                   os.path.basename(config["schema"]) == f"{name}.schema.json",
                   f"{name}: data files are not the {name}.csv and {name}.schema.json the Job writes")

    def check_deployment(self, m, deployment):
        where = f"{m.name}: deployment {deployment['metadata']['name']}"
        self.check(deployment["spec"].get("replicas") == 1, f"{where}: replicas {deployment['spec'].get('replicas')}, not 1")
        self.check(deployment["spec"].get("strategy", {}).get("type") == "Recreate", f"{where}: strategy is not Recreate")
        self.check_pod(where, deployment)

    def run(self, overlays):
        curator = self.check_curator(overlays["curator"]) if "curator" in overlays else None
        self.check(set(overlays) == {"curator", *self.parties}, f"overlays {sorted(overlays)}, expected curator + {self.parties}")
        namespaces = [curator["namespace"]] if curator else []
        for name in self.parties:
            if name in overlays:
                namespaces.append(self.check_party(name, overlays[name], curator))
        self.check(len(set(namespaces)) == len(namespaces), f"overlays share namespaces: {namespaces}")
        return self.errors


def load(render_dir):
    overlays = {}
    for file in sorted(os.listdir(render_dir)):
        if file.endswith(".yaml"):
            name = file[: -len(".yaml")]
            overlays[name] = Manifests(name, yaml.safe_load_all(open(os.path.join(render_dir, file))))
    return overlays


# ---- bad edits the checker must refuse: (name, edit, a phrase of the refusal) ----
def pod(overlays, overlay, kind, name):
    return overlays[overlay].one(kind, name)["spec"]["template"]["spec"]


def volume(overlays, overlay, kind, name, volume_name):
    return next(v for v in pod(overlays, overlay, kind, name)["volumes"] if v["name"] == volume_name)


def replace_volume(overlays, overlay, kind, name, volume_name, source):
    v = volume(overlays, overlay, kind, name, volume_name)
    v.clear()
    v.update({"name": volume_name, **source})


def edit_config(overlays, overlay, key_path, value):
    cm = overlays[overlay].one("ConfigMap", "vfsynth-party-config")
    config = json.loads(cm["data"]["party.json"])
    target = config
    for key in key_path[:-1]:
        target = target[key]
    target[key_path[-1]] = value
    cm["data"]["party.json"] = json.dumps(config)


def set_mount(overlays, overlay, kind, name, mount_name, **fields):
    for m in pod(overlays, overlay, kind, name)["containers"][0]["volumeMounts"]:
        if m["name"] == mount_name:
            m.update(fields)


BAD_EDITS = [
    ("ledger on an emptyDir",
     lambda o: replace_volume(o, "hospital", "Deployment", "vfsynth-party", "data", {"emptyDir": {}}),
     "hospital privacy.ledger: /var/lib/vfsynth/data/hospital.ledger is on data (emptyDir), not a persistentVolumeClaim"),
    ("checkpoints moved to scratch in the config",
     lambda o: edit_config(o, "bank", ["checkpoint_dir"], "/tmp/checkpoints"),
     "bank checkpoint_dir: /tmp/checkpoints is on tmp (emptyDir)"),
    ("a key mounted writable",
     lambda o: set_mount(o, "curator", "Deployment", "vfsynth-curator", "tls", readOnly=False),
     "tls at /var/lib/vfsynth/tls is not mounted read-only"),
    ("a secret readable by all",
     lambda o: volume(o, "insurer", "Deployment", "vfsynth-party", "secrets")["secret"].update({"defaultMode": 0o644}),
     "secret volume secrets has defaultMode 420, not 0400 (256)"),
    ("the Service on another port than the parties dial",
     lambda o: o["curator"].one("Service", "vfsynth-curator")["spec"]["ports"][0].update({"port": 50052}),
     "hospital: dials port 50051, the curator's Service serves 50052"),
    ("the Service targeting the health port",
     lambda o: o["curator"].one("Service", "vfsynth-curator")["spec"]["ports"][0].update({"targetPort": "health"}),
     "curator: Service targets ports [8080], not only the run's 50051"),
    ("a probe on the mTLS port",
     lambda o: pod(o, "curator", "Deployment", "vfsynth-curator")["containers"][0]["readinessProbe"]["grpc"].update({"port": 50051}),
     "curator: readinessProbe is not a grpc probe of the health port 8080"),
    ("a container without limits",
     lambda o: pod(o, "bank", "Deployment", "vfsynth-party")["containers"][0]["resources"].pop("limits"),
     "container party: no cpu in resources.limits"),
    ("a privileged Job",
     lambda o: pod(o, "insurer", "Job", "vfsynth-data-prep")["containers"][0]["securityContext"].update({"privileged": True}),
     "container data-prep: privileged"),
    ("root",
     lambda o: pod(o, "curator", "Deployment", "vfsynth-curator")["securityContext"].update({"runAsUser": 0}),
     "runAsUser 0, not the image's 10001"),
    ("two curators",
     lambda o: o["curator"].one("Deployment", "vfsynth-curator")["spec"].update({"replicas": 2}),
     "replicas 2, not 1"),
    ("a party free to dial anywhere",
     lambda o: o["hospital"].one("NetworkPolicy", "vfsynth-party")["spec"]["egress"].append({}),
     "hospital: an egress rule allows every port or peer"),
    ("a config drifting from its JSON file",
     lambda o: edit_config(o, "insurer", ["privacy", "epsilon"], 100),
     "insurer: the ConfigMap's config is not deploy/k8s/party/insurer/insurer.json"),
]


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("check", "self-test"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, src, render_dir = sys.argv[1:]
    overlays = load(render_dir)
    errors = Checker(src).run(overlays)
    if errors:
        print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
        return 1
    if mode == "check":
        print(f"k8s: {len(overlays)} overlays, {sum(len(m.docs) for m in overlays.values())} objects conform")
        return 0
    missed = 0
    for name, edit, phrase in BAD_EDITS:
        edited = copy.deepcopy(overlays)
        edit(edited)
        refusals = Checker(src).run(edited)
        if any(phrase in r for r in refusals):
            print(f"refused {name}: {next(r for r in refusals if phrase in r)}")
        else:
            missed += 1
            print(f"FAIL: {name} was not refused with '{phrase}'; got {refusals}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
