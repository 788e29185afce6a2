"""The shipped ways to build a book on the workers (deploy/compose.yaml's ``book-build``,
deploy/k8s/book-build.yaml): each runs a ``kalah book build`` command that the real parser
accepts, against the state store the workers take their jobs from, writing where a volume is
mounted. (tests/system/test_book_farm.py runs such builds on real workers.)"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from kalah_core.cli import build_parser
from kalah_core.cli.cmd_book import cmd_book_build

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.yaml"
K8S = ROOT / "deploy" / "k8s"


def parsed(argv: list[str]) -> Any:
    assert argv[:3] == ["kalah", "book", "build"], argv
    args = build_parser().parse_args(argv[1:])
    assert args.func is cmd_book_build
    return args


def under_mount(path: str, mounts: list[str]) -> bool:
    return any(PurePosixPath(path).is_relative_to(mount) for mount in mounts)


def test_the_compose_book_build_posts_to_the_workers_state_store() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    build, worker = services["book-build"], services["worker"]
    assert build["profiles"] == ["book"]  # `up` does not start it
    assert build["image"] == worker["image"]
    args = parsed([*build["entrypoint"], *build["command"]])
    assert args.redis_url == worker["environment"]["KALAH_STATE_REDIS_URL"]
    assert args.redis_url.split("//")[1].split(":")[0] in services  # a service of this file
    assert args.start == "shipped" and args.depth > 6  # deeper than the shipped book
    mounts = [volume.split(":")[1] for volume in build["volumes"]]
    assert under_mount(args.output, mounts) and under_mount(args.checkpoint, mounts)
    # The cache volume the workers share (their databases): writable by the image's user.
    assert "cache:/var/cache/kalah" in build["volumes"]
    assert build["depends_on"]["state"]["condition"] == "service_healthy"


def test_the_kubernetes_job_posts_to_the_worker_pods_state_store() -> None:
    docs = {d["kind"]: d for d in yaml.safe_load_all((K8S / "book-build.yaml").read_text())}
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
    book = next(name for name, v in volumes.items() if "persistentVolumeClaim" in v)
    assert volumes[book]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert under_mount(args.output, [mounts[book]])
    assert under_mount(args.checkpoint, [mounts[book]])  # a restarted pod resumes from it
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsUser"]
    # A worker pod holds the book's table besides its two analysis tables (KALAH_TT_MB each)
    # and the interpreter (about 100 MiB) within its memory limit.
    limit = worker["resources"]["limits"]["memory"]
    assert limit.endswith("Mi")
    assert args.tt_mb + 2 * int(env["KALAH_TT_MB"]) + 100 <= int(limit[:-2])
    # A one-off: `kubectl apply -k deploy/k8s` does not start it.
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert "book-build.yaml" not in kustomization["resources"]
