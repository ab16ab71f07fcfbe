#!/usr/bin/env python3
"""The benchmark suite behind `scripts/bench/all.sh` (run that, not this).

Every scenario runs its contenders in turns (ours, baseline, best scriptable; ours,
baseline, ...) so that noise on this machine hits them alike, and reports medians.
"speed" columns are baseline time / our time (or our throughput / theirs): above 1
means we are faster. Figures are printed and written down, never asserted.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(command, env=None, ok=(0,), capture=False, cwd=None):
    """Runs COMMAND (a list, or a string for bash); returns (seconds, peak RSS MB, stdout)."""
    if isinstance(command, str):
        command = ["bash", "-c", "set -euo pipefail; " + command]
    full_env = dict(os.environ, **(env or {}))
    start = time.monotonic()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=full_env,
        cwd=cwd,
    )
    out, err = process.communicate()
    seconds = time.monotonic() - start
    if process.returncode not in ok:
        raise SystemExit(
            f"error: `{' '.join(command)[-400:]}` failed ({process.returncode}):\n"
            + err.decode(errors="replace")[-2000:]
        )
    return seconds, out.decode(errors="replace") if capture else ""


def timed(command, env=None, ok=(0,), cwd=None):
    """Runs COMMAND under /usr/bin/time; returns (seconds, peak RSS in MB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        if isinstance(command, str):
            command = ["bash", "-c", "set -euo pipefail; " + command]
        seconds, _ = run(
            ["/usr/bin/time", "-f", "%M", "-o", timing.name] + command,
            env=env,
            ok=ok,
            cwd=cwd,
        )
        text = timing.read().strip().splitlines()
        rss_kb = int(text[-1]) if text and text[-1].isdigit() else 0
    return seconds, rss_kb / 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what):
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"error: {what} did not start on 127.0.0.1:{port}")


class Suite:
    def __init__(self, args):
        self.args = args
        self.bin = args.bin
        self.stackpack = os.path.join(self.bin, "stackpack")
        self.runner = os.path.join(self.bin, "stackpack-runner")
        self.registry = os.path.join(self.bin, "stackpack-registry")
        self.work = tempfile.mkdtemp(prefix="stackpack-bench-")
        self.children = []
        self.rows = []  # (scenario, ours, baseline, best, speed vs baseline, speed vs best, rss)
        self.notes = []
        self.labels = {}  # scenario -> contender -> what it ran
        self.fleet_output = None
        self.rollout_output = None
        self.state_output = None
        self.alerts_output = None
        self.scaleout_output = None
        self.terraform = subprocess.run(
            [os.path.join(ROOT, "scripts", "terraform-path.sh")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    # -- servers --------------------------------------------------------------

    def start_distribution(self):
        port = free_port()
        config = os.path.join(self.work, "distribution.yml")
        with open(config, "w") as f:
            f.write(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
                f"storage:\n  filesystem:\n    rootdirectory: {self.work}/distribution\n"
                f"http:\n  addr: 127.0.0.1:{port}\n"
            )
        self.children.append(
            subprocess.Popen(
                ["docker-registry", "serve", config],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        wait_port(port, "CNCF Distribution")
        self.distribution = f"127.0.0.1:{port}"

    def start_ours(self):
        data = os.path.join(self.work, "registry")
        subprocess.run([self.registry, "init", "--data", data], check=True, capture_output=True)
        created = subprocess.run(
            [self.registry, "token", "create", "--role", "publisher", "--json", "--data", data],
            check=True,
            capture_output=True,
            text=True,
        )
        self.token = json.loads(created.stdout)["token"]
        port = free_port()
        self.children.append(
            subprocess.Popen(
                [self.registry, "serve", "--listen", f"127.0.0.1:{port}", "--data", data],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        wait_port(port, "stackpack-registry")
        self.ours = f"127.0.0.1:{port}"
        log(f"CNCF Distribution on {self.distribution}, our registry on {self.ours}")

    def fresh_registry(self, kind):
        """An empty registry of KIND for one run: (host, token or None, stop)."""
        data = tempfile.mkdtemp(prefix=f"fresh-{kind}-", dir=self.work)
        port = free_port()
        token = None
        if kind == "distribution":
            config = os.path.join(data, "config.yml")
            with open(config, "w") as f:
                f.write(
                    "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
                    f"storage:\n  filesystem:\n    rootdirectory: {data}/storage\n"
                    f"http:\n  addr: 127.0.0.1:{port}\n"
                )
            command = ["docker-registry", "serve", config]
        else:
            subprocess.run([self.registry, "init", "--data", data], check=True, capture_output=True)
            token = json.loads(subprocess.run(
                [self.registry, "token", "create", "--role", "publisher", "--json", "--data", data],
                check=True, capture_output=True, text=True).stdout)["token"]
            command = [self.registry, "serve", "--listen", f"127.0.0.1:{port}", "--data", data]
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, kind)

        def stop():
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
            shutil.rmtree(data, ignore_errors=True)

        return f"127.0.0.1:{port}", token, stop

    def stop(self):
        for child in self.children:
            child.send_signal(signal.SIGTERM)
        for child in self.children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
        shutil.rmtree(self.work, ignore_errors=True)

    # -- fixtures -------------------------------------------------------------

    def make_repo(self, name, mb, small_mb=None):
        """A vendor repository with one stack of about MB megabytes (common.sh's make_repo)."""
        repo = os.path.join(self.work, name)
        env = {} if small_mb is None else {"SMALL_MB": str(small_mb)}
        subprocess.run(
            ["bash", "-c", f'source "{ROOT}/scripts/bench/common.sh"; make_repo "$0" "$1"', repo, str(mb)],
            check=True,
            env=dict(os.environ, STACKPACK_BIN=self.stackpack, **env),
        )
        return repo

    def keygen(self):
        self.key = os.path.join(self.work, "vendor")
        subprocess.run([self.stackpack, "keygen", "--out", self.key], check=True, capture_output=True)

    def runner_home(self, name):
        home = os.path.join(self.work, name)
        subprocess.run(
            [self.runner, "--home", home, "init", "--customer", "bench", "--engine-path", self.terraform],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [self.runner, "--home", home, "trust", "add", self.key + ".pub"],
            check=True,
            capture_output=True,
        )
        return home

    # -- recording ------------------------------------------------------------

    def contest(self, scenario, contenders, runs=None, prepare=None, record=True):
        """Runs each contender (name -> callable returning (seconds, rss)) RUNS times, in turns."""
        runs = runs or self.args.runs
        times = {name: [] for name in contenders}
        rss = []
        for i in range(runs):
            for name, action in contenders.items():
                if prepare:
                    prepare(name, i)
                seconds, peak = action(i)
                times[name].append(seconds)
                if name == "ours":
                    rss.append(peak)
        if record:
            self.record_times(scenario, times, rss)
        return times

    def record_times(self, scenario, times, rss):
        ours = times["ours"]
        cells = [f"{statistics.median(ours):.2f} s"]
        speeds = []
        for name in ("baseline", "best"):
            theirs = times.get(name)
            if not theirs:
                cells.append("—")
                speeds.append("—")
                continue
            cells.append(f"{statistics.median(theirs):.2f} s ({self.labels[scenario][name]})")
            speeds.append(f"{statistics.median([t / o for t, o in zip(theirs, ours)]):.2f}×")
        self.row(scenario, cells[0], cells[1], cells[2], speeds[0], speeds[1],
                 f"{statistics.median(rss):.0f} MB" if rss and max(rss) > 0 else "—")

    def row(self, *cells):
        self.rows.append(cells)
        log("  " + " | ".join(cells))

    # -- scenarios ------------------------------------------------------------

    def build_and_publish(self):
        mb = self.args.size
        log(f"== build and publish, a {mb} MB stack ==")
        repo = self.make_repo("repo", mb)
        tree = os.path.join(repo, "stacks", "bench")
        subprocess.run(f"cat $(find {tree} -type f) > /dev/null", shell=True, check=True)
        out = os.path.join(self.work, "out")
        self.labels = {}

        def fresh(path):
            shutil.rmtree(path, ignore_errors=True)
            return path

        self.labels["build"] = {"baseline": "tar -czf + sha256sum", "best": "tar | pigz + sha256sum"}
        builds = self.contest("build", {
            "ours": lambda i: timed([self.stackpack, "build", "--quiet", "--repo", repo,
                                     "--key", self.key + ".key", "--out", fresh(out + "-layout")]),
            "baseline": lambda i: timed(f"tar -C {repo} -czf {out}.tgz stacks/bench && sha256sum {out}.tgz"),
            "best": lambda i: timed(f"tar -C {repo} -cf - stacks/bench | pigz > {out}.tgz && sha256sum {out}.tgz"),
        })
        build_median = statistics.median(builds["ours"])
        layout = out + "-layout"
        # The first build's layout holds one bundle and its signature: every byte a
        # registry that has none of it receives, which is what one tar+gzip stack
        # layer made a second version send again.
        self.bundle_bytes = sum(
            os.path.getsize(os.path.join(layout, "blobs", "sha256", f))
            for f in os.listdir(os.path.join(layout, "blobs", "sha256"))
            if not f.startswith(".")
        )

        for registry, label, env in (
            (self.distribution, "CNCF Distribution", {}),
            (self.ours, "our registry", {"STACKPACK_REGISTRY_TOKEN": self.token}),
        ):
            creds = ["--dest-creds", f"skopeo:{self.token}"] if registry == self.ours else []
            scenario = f"publish to {label} (pack + push)"
            self.labels[scenario] = {"baseline": "tar -czf + skopeo copy", "best": "tar | pigz + skopeo copy"}
            skopeo = lambda ns: (
                f"skopeo copy --quiet --dest-tls-verify=false {' '.join(creds)} "
                f"oci:{layout}:stacks/bench:0.1.0 docker://{registry}/{ns}/stacks/bench:0.1.0"
            )
            self.contest(scenario, {
                "ours": lambda i: timed([self.stackpack, "publish", "--quiet", "--repo", repo,
                                         "--key", self.key + ".key", "--out", fresh(f"{out}-pub-{i}"),
                                         "--registry", f"{registry}/ours{i}", "--insecure", "--no-modules"],
                                        env=env),
                "baseline": lambda i: timed(f"tar -C {repo} -czf {out}.tgz stacks/bench && sha256sum {out}.tgz && "
                                            + skopeo(f"theirs{i}")),
                "best": lambda i: timed(f"tar -C {repo} -cf - stacks/bench | pigz > {out}.tgz && sha256sum {out}.tgz && "
                                        + skopeo(f"best{i}")),
            })
            # Push alone, beside skopeo's push alone of the same layout, each into a
            # registry started empty for that one run: skopeo's blob-info cache then
            # knows no repository to mount the layer from, and both send every byte.
            # Ours is `pushSeconds` from `publish --json`: blobs and manifest, not the
            # build, the signature or the tag.
            kind = "distribution" if registry == self.distribution else "ours"
            scenario = f"push alone to {label} (empty registry each run)"
            self.labels[scenario] = {"baseline": "skopeo copy"}

            def push_ours(i, kind=kind):
                host, token, stop = self.fresh_registry(kind)
                try:
                    report = subprocess.run(
                        [self.stackpack, "publish", "--quiet", "--json", "--repo", repo,
                         "--key", self.key + ".key", "--out", fresh(f"{out}-push-{i}"),
                         "--registry", f"{host}/push", "--insecure", "--no-modules"],
                        env=dict(os.environ, **({"STACKPACK_REGISTRY_TOKEN": token} if token else {})),
                        capture_output=True, text=True, check=True)
                finally:
                    stop()
                return sum(s["pushSeconds"] for s in json.loads(report.stdout)["stacks"]), 0

            def push_skopeo(i, kind=kind):
                host, token, stop = self.fresh_registry(kind)
                try:
                    creds = f"--dest-creds skopeo:{token}" if token else ""
                    return timed(f"skopeo copy --quiet --dest-tls-verify=false {creds} "
                                 f"oci:{layout}:stacks/bench:0.1.0 docker://{host}/push/stacks/bench:0.1.0")
                finally:
                    stop()

            self.contest(scenario, {"ours": push_ours, "baseline": push_skopeo})

        # Pull and verify, from each registry, into a fresh runner home each time.
        for registry, label in ((self.distribution, "CNCF Distribution"), (self.ours, "our registry")):
            env = {"STACKPACK_REGISTRY_TOKEN": self.token} if registry == self.ours else {}
            creds = f"--src-creds skopeo:{self.token}" if registry == self.ours else ""
            scenario = f"pull + verify from {label}"
            self.labels[scenario] = {"baseline": "skopeo copy (digest-checked)", "best": "skopeo copy (digest-checked)"}
            homes = {}

            def prepare(name, i, homes=homes):
                if name == "ours":
                    homes[i] = self.runner_home(f"home-{len(self.rows)}-{i}")

            self.contest(scenario, {
                "ours": lambda i: timed([self.runner, "--home", homes[i], "pull", "--insecure",
                                         f"{registry}/ours0/stacks/bench:0.1.0"], env=env),
                "baseline": lambda i: timed(f"rm -rf {out}-skopeo && skopeo copy --quiet --src-tls-verify=false {creds} "
                                            f"docker://{registry}/theirs0/stacks/bench:0.1.0 oci:{out}-skopeo:bench"),
            }, prepare=prepare)
            self.pulled_home = homes[0]

        # Verify alone: the bundle the runner already holds, beside hashing its blobs.
        scenario = "verify alone"
        blobs = subprocess.run(
            ["bash", "-c", f"find {self.pulled_home} -path '*blobs/sha256/*' -type f -size +0 | sort"],
            capture_output=True, text=True, check=True,
        ).stdout.split()
        files = " ".join(blobs)
        self.labels[scenario] = {"baseline": "sha256sum of its blobs", "best": "openssl dgst -sha256 of its blobs"}
        self.contest(scenario, {
            "ours": lambda i: timed([self.runner, "--home", self.pulled_home, "verify", "bench@0.1.0"]),
            "baseline": lambda i: timed(f"sha256sum {files}"),
            "best": lambda i: timed(f"openssl dgst -sha256 {files}"),
        }, runs=self.args.runs * 2)

        # A second version after a one-line `.tf` change: bytes on the wire.
        with open(os.path.join(tree, "v1.tf"), "a") as f:
            f.write("\n# one small change\n")
        subprocess.run(["git", "-C", repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qam", "edit"],
                       check=True)
        report = subprocess.run(
            [self.stackpack, "publish", "--quiet", "--json", "--repo", repo, "--key", self.key + ".key",
             "--out", f"{out}-pub-0", "--registry", f"{self.distribution}/ours0", "--insecure", "--no-modules"],
            capture_output=True, text=True, check=True,
        )
        sent = json.loads(report.stdout)["stacks"][0]["bytesSent"]
        self.row("second version after a one-line .tf edit (bytes sent)",
                 f"{sent / 1048576:.2f} MiB",
                 f"{self.bundle_bytes / 1048576:.1f} MiB (the whole bundle, as one stack layer re-sent it)",
                 "only the changed layer", f"{self.bundle_bytes / max(sent, 1):.0f}×", "—", "—")

    def fleet(self):
        """Support's queries at 10,000 customers, through scripts/bench/fleet.sh."""
        customers = 1000 if self.args.quick else 10000
        log(f"== fleet queries at {customers:,} customers ==")
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        data = os.path.join(target, f"bench-fleet-{customers}")
        env = dict(os.environ, CUSTOMERS=str(customers), FLEET_DATA=data,
                   ROUNDS="10" if self.args.quick else "30", WHOLE_ROUNDS="3")
        out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bench", "fleet.sh")], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            log(out.stderr[-2000:])
            self.row(f"fleet queries at {customers:,} customers", "failed (see the log)", "—", "—", "—", "—", "—")
            return
        queries = []
        for line in out.stdout.splitlines():
            cells = line.split()
            if len(cells) >= 4 and cells[0].startswith("/") and cells[1].replace(".", "").isdigit():
                queries.append((cells[0], float(cells[1]), float(cells[2])))
        if not queries:
            self.row(f"fleet queries at {customers:,} customers", "no figures (see the log)", "—", "—", "—", "—", "—")
            return
        paged = [q for q in queries if q[0].startswith(("/api/v1/fleet", "/api/v1/support", "/api/v1/customers",
                                                        "/api/v1/adoption", "/ui"))]
        worst = max(paged, key=lambda q: q[2])
        p50 = statistics.median(q[1] for q in paged)
        self.row(f"fleet: {len(paged)} support queries and pages at {customers:,} customers × 30 stacks × 20 versions",
                 f"p99 ≤ {worst[2]:.0f} ms (slowest: `{worst[0]}`); median p50 {p50:.1f} ms",
                 "issue 12 before: 128 ms p50 / 156 ms p99 (`/support/versions`, 44× fewer receipts)",
                 "aim: p99 < 50 ms", f"{156 / max(worst[2], 0.1):.1f}×", "—", "—")
        self.fleet_output = out.stdout.strip()

    def rollout(self):
        """The assignment poll of 10,000 runners and a 100-customer rollout, through
        scripts/bench/rollout.sh."""
        customers = 1000 if self.args.quick else 10000
        log(f"== assignment poll at {customers:,} customers, rollout of 100 ==")
        env = dict(os.environ, CUSTOMERS=str(customers),
                   POLL_SECS="5" if self.args.quick else "20", SLOW_SECS="10" if self.args.quick else "60")
        out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bench", "rollout.sh")], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            log(out.stderr[-2000:])
            self.row("assignment poll and rollout", "failed (see the log)", "—", "—", "—", "—", "—")
            return
        polls = {}
        for line in out.stdout.splitlines():
            cells = line.split()
            if len(cells) == 7 and "@" in cells[0] and cells[2].replace(".", "").isdigit():
                polls[cells[0]] = (float(cells[2]), float(cells[3]), int(cells[5]))
        for rate, clients in (("3", "0"), ("300", "0"), ("300", "4")):
            ours = polls.get(f"assignment-poll@{rate}/s+{clients}-support")
            best = polls.get(f"GET-/healthz@{rate}/s+{clients}-support")
            if not ours or not best:
                continue
            beside = f" beside {clients} support clients" if clients != "0" else ""
            self.row(f"assignment poll at {rate}/s{beside}, {customers:,} customers: p50 / p99",
                     f"{ours[0]:.2f} / {ours[1]:.2f} ms ({ours[2]} errors)",
                     f"{best[0]:.2f} / {best[1]:.2f} ms (bare `GET /healthz`, same rate)", "—",
                     f"{best[1] / max(ours[1], 0.01):.2f}× (p99)", "—", "—")
        done = re.search(r"promote→completed ([\d.]+) s observed", out.stdout)
        best = re.search(r"soak total \+ one tick\): ([\d.]+) s", out.stdout)
        if done and best:
            self.row("rollout of 100 emulated customers, 3 waves, soak 2 s: promote → completed",
                     f"{float(done.group(1)):.2f} s", f"{float(best.group(1)):.2f} s (soak total + one tick)",
                     "—", f"{float(best.group(1)) / float(done.group(1)):.2f}×", "—", "—")
        self.rollout_output = out.stdout.strip()

    def state(self):
        """Plan and apply of the example with the state in the account's bucket beside
        the local backend, and preflight beside the plan, through scripts/bench/state.sh."""
        runs = 1 if self.args.quick else 3
        log(f"== remote state and preflight: the example's data plane, {runs} run(s) each ==")
        env = dict(os.environ, BIN_DIR=self.bin, RUNS=str(runs))
        out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bench", "state.sh")], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            log(out.stderr[-2000:])
            self.row("plan and apply, state in the account's bucket", "failed (see the log)", "—", "—", "—", "—", "—")
            return
        median = {}
        for line in out.stdout.splitlines():
            cells = line.split()
            if len(cells) == 4 and cells[0] == "median":
                median[(cells[1], cells[2])] = float(cells[3])
        for step, name in (("plan-first", "plan, first (engine init included)"),
                           ("apply", "apply (36 resources created)"),
                           ("plan-unchanged", "plan after the apply (nothing to change)")):
            s3, local = median.get((step, "s3")), median.get((step, "local"))
            if s3 is None or local is None:
                continue
            self.row(f"example data plane, {name}: state in the account's S3 bucket (moto)",
                     f"{s3:.2f} s", f"{local:.2f} s (`local` backend in the home)", "—",
                     f"{local / s3:.2f}×", "—", "—")
        pre, plan = median.get(("preflight", "local")), median.get(("plan-unchanged", "local"))
        if pre is not None and plan is not None:
            self.row("example data plane, `stackpack-runner preflight` alone (quotas, instance types, range)",
                     f"{pre:.2f} s", f"{plan:.2f} s (the plan after the apply)", "—",
                     f"{plan / pre:.2f}×", "—", "—")
        self.state_output = out.stdout.strip()

    def alerts(self):
        """Receipts that each change a customer's state, with a webhook told of each
        and without, through scripts/bench/alerts.sh."""
        receipts = 200 if self.args.quick else 1000
        log(f"== alert fan-out of {receipts:,} state changes ==")
        env = dict(os.environ, RECEIPTS=str(receipts), ROUNDS="1" if self.args.quick else "3")
        out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bench", "alerts.sh")], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            log(out.stderr[-2000:])
            self.row("alert fan-out", "failed (see the log)", "—", "—", "—", "—", "—")
            return
        rates = {}
        arrived = None
        for line in out.stdout.splitlines():
            cells = line.split()
            if cells and cells[0] in ("off", "on") and len(cells) >= 4:
                rate = next((c for c in cells[1:] if c.replace(".", "").isdigit()), None)
                if rate:
                    rates[cells[0]] = float(rate)
                if cells[0] == "on" and cells[-1] == "s":
                    arrived = cells[-2]
        if "off" in rates and "on" in rates:
            self.row(f"receipts ingested with alerts on, {receipts:,} state changes to a local webhook",
                     f"{rates['on']:.0f} receipts/s (last event after {arrived} s)",
                     f"{rates['off']:.0f} receipts/s with alerts off", "—",
                     f"{rates['on'] / max(rates['off'], 0.01):.2f}×", "—", "—")
        self.alerts_output = out.stdout.strip()

    def registries(self):
        log("== our registry beside CNCF Distribution (wrk) ==")
        seconds = self.args.wrk_seconds
        accept = "Accept: application/vnd.oci.image.manifest.v1+json"
        layer = None
        manifest = json.loads(subprocess.run(
            ["curl", "-sf", "-H", accept, f"http://{self.distribution}/v2/theirs0/stacks/bench/manifests/0.1.0"],
            capture_output=True, text=True, check=True).stdout)
        layer = max(manifest["layers"], key=lambda l: l["size"])["digest"]
        for what, path, headers in (
            ("manifest GET", "/v2/{ns}/stacks/bench/manifests/0.1.0", ["-H", accept]),
            ("blob GET (stack layer)", "/v2/{ns}/stacks/bench/blobs/" + layer, []),
        ):
            for clients in (1, 16):
                results = {}
                auth = ["-H", f"Authorization: Bearer {self.token}"]
                for name, host, ns, extra in (("ours", self.ours, "ours0", auth),
                                              ("baseline", self.distribution, "theirs0", []),
                                              ("ours2", self.ours, "ours0", auth),
                                              ("baseline2", self.distribution, "theirs0", [])):
                    out = subprocess.run(
                        ["wrk", "--latency", "-t", str(min(clients, 2)), "-c", str(clients), "-d", f"{seconds}s"]
                        + headers + extra + [f"http://{host}" + path.format(ns=ns)],
                        capture_output=True, text=True, check=True,
                    ).stdout
                    results.setdefault(name.rstrip("2"), []).append(parse_wrk(out))
                ours = merge_wrk(results["ours"])
                theirs = merge_wrk(results["baseline"])
                if what.startswith("manifest"):
                    self.row(f"{what}, {clients} client(s): requests/s (p99)",
                             f"{ours['rps']:.0f}/s ({ours['p99']})",
                             f"{theirs['rps']:.0f}/s ({theirs['p99']}) (Distribution)", "—",
                             f"{ours['rps'] / theirs['rps']:.2f}×", "—", "—")
                else:
                    self.row(f"{what}, {clients} client(s): MB/s",
                             f"{ours['mbps']:.0f} MB/s", f"{theirs['mbps']:.0f} MB/s (Distribution)", "—",
                             f"{ours['mbps'] / theirs['mbps']:.2f}×", "—", "—")

    def scaleout(self):
        """Three replicas behind haproxy, blobs in moto's S3, in the production layout
        (metadata in PostgreSQL) and on one shared SQLite database, beside
        Distribution on the same S3 and the embedded default, through
        scripts/bench/scaleout.sh. Its progress goes straight to the suite's stderr:
        the run takes minutes."""
        log("== scale-out: 3 replicas + haproxy + S3 (moto), Distribution on the same S3 ==")
        out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bench", "scaleout.sh")]
                             + (["--quick"] if self.args.quick else []),
                             stdout=subprocess.PIPE, text=True)
        if out.returncode != 0:
            self.row("scale-out, 3 replicas behind haproxy", "failed (see the log above)", "—", "—", "—", "—", "—")
            return
        for line in out.stdout.splitlines():
            cells = line.split("\t")
            if len(cells) == 7 and cells[0] == "row":
                _, what, ours, baseline, embedded, speed, vs_embedded = cells
                # `what` starts with the layout of ours it measures.
                self.row(f"scale-out, {what}", ours,
                         baseline if baseline == "—" else f"{baseline} (Distribution, S3 on moto)",
                         f"{embedded} (embedded: one process, SQLite + folder)", speed, vs_embedded, "—")
        self.scaleout_output = "\n".join(
            line for line in out.stdout.splitlines() if not line.startswith("row\t")).strip()

    def check_tree(self):
        modules = self.args.modules
        log(f"== check on a module tree of {modules} modules ==")
        repo = os.path.join(self.work, "modules-repo")
        os.makedirs(os.path.join(repo, "stacks", "big"))
        with open(os.path.join(repo, "stackpack.toml"), "w") as f:
            f.write('stacks = ["stacks/*"]\nmodules = ["modules/*"]\n')
        calls = []
        for m in range(modules):
            d = os.path.join(repo, "modules", f"m{m}")
            os.makedirs(d)
            with open(os.path.join(d, "variables.tf"), "w") as f:
                for v in range(10):
                    f.write(f'variable "v{v}" {{\n  description = "input {v}"\n  type        = string\n'
                            f'  default     = "{m}-{v}"\n}}\n\n')
            with open(os.path.join(d, "main.tf"), "w") as f:
                f.write("locals {\n" + "".join(f"  l{v} = upper(var.v{v})\n" for v in range(10)) + "}\n")
            with open(os.path.join(d, "outputs.tf"), "w") as f:
                for v in range(10):
                    f.write(f'output "o{v}" {{\n  description = "output {v}"\n  value       = local.l{v}\n}}\n\n')
            calls.append(f'module "m{m}" {{\n  source = "../../modules/m{m}"\n  v0     = var.name\n}}\n')
        with open(os.path.join(repo, "stacks", "big", "main.tf"), "w") as f:
            f.write('variable "name" {\n  description = "a name"\n  type        = string\n}\n\n' + "\n".join(calls))
        with open(os.path.join(repo, "stacks", "big", "stack.toml"), "w") as f:
            f.write('description = "many modules"\n')
        subprocess.run(f"cd {repo} && printf '.stackpack/\\n' > .gitignore && git init -q -b main && git add -A && "
                       "git -c user.name=b -c user.email=b@b commit -qm tree", shell=True, check=True)
        scenario = f"check, {modules} modules"
        self.labels[scenario] = {"baseline": "terraform fmt -check -recursive", "best": "terraform fmt -check -recursive"}
        self.contest(scenario, {
            # Exit 1 is a finding (a lint), still a full check.
            "ours": lambda i: timed([self.stackpack, "check", "--repo", repo, "--against", "HEAD"], ok=(0, 1)),
            "baseline": lambda i: timed([self.terraform, "fmt", "-check", "-recursive", repo], ok=(0, 3)),
        })

    def scaling(self):
        log("== scaling ==")
        for mb in self.args.scale:
            # The same 5 MB of `.tf` every time: only the binaries grow, so memory that
            # grows with them would be ours to fix.
            repo = self.make_repo(f"scale-{mb}", mb, small_mb=min(5, mb // 2))
            layout = os.path.join(self.work, f"scale-{mb}-layout")
            home = self.runner_home(f"scale-{mb}-home")
            exported = os.path.join(self.work, f"scale-{mb}.tar")
            build = timed([self.stackpack, "build", "--quiet", "--repo", repo, "--key", self.key + ".key",
                           "--out", layout])
            subprocess.run([self.stackpack, "export", "--from", layout, "-o", exported, "bench@0.1.0"],
                           check=True, capture_output=True)
            imported = timed([self.runner, "--home", home, "import", exported])
            verify = timed([self.runner, "--home", home, "verify", "bench@0.1.0"])
            pigz = timed(f"tar -C {repo} -cf - stacks/bench | pigz > {layout}.tgz && sha256sum {layout}.tgz")
            self.row(f"scaling {mb} MB: build / import / verify",
                     f"{build[0]:.2f} s / {imported[0]:.2f} s / {verify[0]:.2f} s",
                     f"{pigz[0]:.2f} s (tar | pigz + sha256sum)", "—",
                     f"{pigz[0] / build[0]:.2f}× (build)", "—",
                     f"{build[1]:.0f} / {imported[1]:.0f} / {verify[1]:.0f} MB")
            for path in (repo, layout, home, exported, layout + ".tgz"):
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                elif os.path.exists(path):
                    os.remove(path)


def parse_wrk(out):
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    transfer = re.search(r"Transfer/sec:\s+([\d.]+)([KMG]?B)", out)
    scale = {"B": 1 / 1e6, "KB": 1024 / 1e6, "MB": 1048576 / 1e6, "GB": 1073741824 / 1e6}[transfer.group(2)]
    p99 = re.search(r"99%\s+([\d.]+\w+)", out).group(1)
    return {"rps": rps, "mbps": float(transfer.group(1)) * scale, "p99": p99}


def merge_wrk(results):
    return {
        "rps": statistics.median(r["rps"] for r in results),
        "mbps": statistics.median(r["mbps"] for r in results),
        "p99": " / ".join(r["p99"] for r in results),
    }


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        found = re.search(r"model name\s*:\s*(.*)", text)
        model = found.group(1) if found else model
        sha_ni = " sha_ni" in text or "\tsha_ni" in text or re.search(r"\bsha_ni\b", text) is not None
    except OSError:
        sha_ni = False
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
            memory = f", {kb / 1048576:.1f} GiB RAM"
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores{memory}, Linux {platform.release()}", sha_ni


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--out", help="the Markdown file to write (docs/benchmarks.md; with --only, none "
                        "unless named, so that a partial run does not replace the whole suite's figures)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--preamble", default="", help="a file of lines measured before (sizes, SHA)")
    parser.add_argument("--only", choices=["transfers", "scaleout", "fixed"],
                        help="run only the build, publish, push and pull rows, only the scale-out rows, "
                        "or only the fixed costs (check of a module tree, a 10 MB build)")
    args = parser.parse_args()
    if args.out is None and args.only is None:
        args.out = os.path.join(ROOT, "docs", "benchmarks.md")
    if args.out is None:
        args.no_write = True
    args.runs = args.runs or (1 if args.quick else 3)
    args.size = 30 if args.quick else 100
    args.modules = 40 if args.quick else 200
    args.scale = [10] if args.only == "fixed" else [10, 100] if args.quick else [10, 100, 1000]
    args.wrk_seconds = 1 if args.quick else 3

    suite = Suite(args)
    started = time.monotonic()
    try:
        # The scale-out bench starts its own registries; the suite's are for the others.
        if args.only not in ("scaleout", "fixed"):
            suite.keygen()
            suite.start_distribution()
            suite.start_ours()
            suite.build_and_publish()
        if args.only == "fixed":
            suite.keygen()
            suite.check_tree()
            suite.scaling()
        if args.only is None:
            suite.registries()
            suite.check_tree()
            suite.scaling()
            suite.fleet()
            suite.rollout()
            suite.state()
            suite.alerts()
        if args.only in (None, "scaleout"):
            suite.scaleout()
        suite.notes.append(
            "The push-alone rows push into a registry started empty for each run, for both "
            "contenders, so skopeo's blob-info cache has no repository to mount the layer from "
            "and both send every byte. Ours is `pushSeconds` from `stackpack publish --json` "
            "(blobs and manifest; not the build, the signature or the tag), skopeo's the whole "
            "`skopeo copy` process."
        )
        suite.notes.append(
            "Files of 1 MiB or more whose first block does not shrink (the bench stack's random "
            "binaries, like provider zips or images) travel as layers of their own holding exactly "
            "their bytes (`docs/bundle-format.md`), so a second version after a `.tf` edit sends "
            "the small stack layer, the config and the manifest; the binaries' layers are already "
            "there under their own digests."
        )
        suite.notes.append(
            "A bundle's blobs move four at a time over pooled connections; uploads are one "
            "streamed PUT up to 256 MiB and 64 MiB PATCH chunks above. A pull hashes each blob "
            "as it arrives, verifies the staged bundle, then renames its blobs into the store."
        )
        suite.notes.append(
            "Scale-out rows come from `scripts/bench/scaleout.sh`: three `stackpack-registry serve` "
            "replicas reading one `--config` file, blobs in S3, metadata in one SQLite database the replicas "
            "share on this one host (PostgreSQL metadata, for replicas on several hosts, is not built yet), "
            "behind haproxy, beside CNCF "
            "Distribution's own S3 driver on the same S3 (`redirect: disable`, so its blob GETs stream "
            "through it as ours do); the \"best\" column holds the embedded default there. The S3 is "
            "moto, the S3 emulator, a Python process on this same machine: not what a real bucket gives."
        )
        suite.notes.append(
            "Fleet rows come from `scripts/bench/fleet.sh`: a registry seeded with 10,000 customers × "
            "30 stacks × 20 versions and their history through the registry's own functions "
            "(seeded once and kept under the target folder), every support query and page asked "
            "over HTTP; the row gives the slowest query's p99 and the median of the p50s. Issue "
            "12's figures before were at 10,000 customers with 14,334 receipts, 44× fewer."
        )
    finally:
        suite.stop()
    elapsed = time.monotonic() - started

    header = ("scenario", "ours", "baseline", "best scriptable", "speed vs baseline (median)",
              "speed vs best", "our peak memory")
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    # A `|` inside a cell (`tar | pigz`) would end it.
    table += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in suite.rows]
    described, sha_ni = machine()
    preamble = open(args.preamble).read().strip() if args.preamble else ""
    sections = ""
    for title, intro, output in [
        ("Fleet queries", "`scripts/bench/fleet.sh` as the suite ran it: p50 and p99 "
         "per query over HTTP, then `/v2/` manifest GETs idle and beside 4 clients looping on "
         "support queries.", suite.fleet_output),
        ("Rollouts", "`scripts/bench/rollout.sh` as the suite ran it: the assignment poll "
         "open-loop (latency from each request's scheduled time), beside a bare `GET /healthz` at "
         "the same rate; then a rollout of 100 emulated runners beside the configured soak times.",
         suite.rollout_output),
        ("Remote state and preflight", "`scripts/bench/state.sh` as the suite ran it: the "
         "example's data plane planned, applied and planned again with its state in a bucket of "
         "the (emulated) account beside the `local` backend, and preflight alone beside the plan.",
         suite.state_output),
        ("Alerts", "`scripts/bench/alerts.sh` as the suite ran it: receipts that each "
         "change a customer's state, ingested with a webhook told of each and without, and when "
         "the last event reached the webhook.", suite.alerts_output),
        ("Scale-out", "`scripts/bench/scaleout.sh` as the suite ran it: three replicas "
         "behind haproxy with blobs in moto's S3, beside Distribution on the same S3 and the "
         "embedded default.", suite.scaleout_output),
    ]:
        if output:
            sections += f"\n## {title}\n\n{intro}\n\n```\n{output}\n```\n"
    print()
    print("\n".join(table))
    print(f"\n{described}; {args.runs} run(s) per contender; suite took {elapsed:.0f} s")
    if args.no_write:
        # Printed only: every table the run made, the scenario scripts' included.
        print(sections)
        return
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    # What follows the marker in the file (sections measured by other scripts, such
    # as `scripts/bench/kit.sh`) is kept as it is.
    kept = ""
    if os.path.exists(args.out):
        previous = open(args.out).read()
        if KEPT_MARKER in previous:
            kept = previous[previous.index(KEPT_MARKER):]
    with open(args.out, "w") as f:
        f.write(f"""# Benchmarks

Measured by `scripts/bench/all.sh{' --quick' if args.quick else ''}` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC,
commit `{commit}`, on {described} (SHA instructions: {'yes' if sha_ni else 'no'}).
Each contender ran {args.runs} time(s), in turns with the others; figures are medians.
"Speed" is the baseline's time divided by ours (or our throughput over theirs): above
1 we are faster. The whole suite took {elapsed:.0f} s. Re-run it with
`scripts/bench/all.sh` (add `--quick` for a smaller, faster pass); it writes this file.

{chr(10).join(table)}

{preamble}

""" + "\n".join(f"- {note}" for note in suite.notes) + "\n")
        f.write(sections)
        if kept:
            f.write("\n" + kept)
    log(f"wrote {args.out}")


# Everything after this line in docs/benchmarks.md is written by hand or by other
# scripts and kept when the suite rewrites the file.
KEPT_MARKER = "<!-- kept by scripts/bench/all.sh: sections measured apart -->"


if __name__ == "__main__":
    main()
