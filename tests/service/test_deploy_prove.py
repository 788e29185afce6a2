"""The shipped ways to run a proof on the workers (deploy/compose.yaml's ``prove``,
deploy/k8s/prove.yaml): each runs a ``kalah prove`` command that the real parser accepts,
against the state store the workers take their jobs from, with its checkpoint where a volume is
mounted, so that a restarted run resumes. (tests/engine/test_prove.py and the system tests run
such proofs on real workers.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from test_deploy_book import under_mount

from kalah_core.cli import build_parser
from kalah_core.cli.cmd_prove import cmd_prove

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
K8S = ROOT / "deploy" / "k8s"


def parsed(argv: list[str]) -> Any:
    assert argv[:2] == ["kalah", "prove"], argv
    args = build_parser().parse_args(argv[1:])
    assert args.func is cmd_prove
    return args


def test_the_compose_proof_posts_to_the_workers_state_store() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    prove, worker = services["prove"], services["worker"]
    assert prove["profiles"] == ["prove"]  # `up` does not start it
    assert prove["image"] == worker["image"]
    args = parsed([*prove["entrypoint"], *prove["command"]])
    assert args.redis_url == worker["environment"]["KALAH_STATE_REDIS_URL"]
    assert args.redis_url.split("//")[1].split(":")[0] in services  # a service of this file
    assert args.json  # its last line is the proof, for whatever reads the log
    mounts = [volume.split(":")[1] for volume in prove["volumes"]]
    assert under_mount(args.checkpoint, mounts)  # run again, it resumes
    assert prove["depends_on"]["state"]["condition"] == "service_healthy"


def test_the_kubernetes_job_posts_to_the_worker_pods_state_store() -> None:
    docs = {d["kind"]: d for d in yaml.safe_load_all((K8S / "prove.yaml").read_text())}
    job, claim = docs["Job"], docs["PersistentVolumeClaim"]
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "OnFailure" and job["spec"]["backoffLimit"] >= 1
    (container,) = pod["containers"]
    args = parsed(container["command"])
    workers = yaml.safe_load((K8S / "worker.yaml").read_text())
    (worker,) = workers["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in worker["env"]}
    assert args.redis_url == env["KALAH_STATE_REDIS_URL"]
    assert container["image"] == worker["image"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    proof = next(name for name, v in volumes.items() if "persistentVolumeClaim" in v)
    assert volumes[proof]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert under_mount(args.checkpoint, [mounts[proof]])  # a restarted pod resumes from it
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsUser"]
    # A worker pod holds the tests' table besides its two analysis tables (KALAH_TT_MB each)
    # and the interpreter (about 100 MiB) within its memory limit.
    limit = worker["resources"]["limits"]["memory"]
    assert limit.endswith("Mi")
    assert args.tt_mb + 2 * int(env["KALAH_TT_MB"]) + 100 <= int(limit[:-2])
    # A one-off: `kubectl apply -k deploy/k8s` does not start it.
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert "prove.yaml" not in kustomization["resources"]
