#!/usr/bin/env python3
"""moto, the emulator of the AWS cloud API, with two of its answers made AWS's own.

    python3 scripts/moto-server.py -H 127.0.0.1 -p PORT    (the arguments of `python -m moto.server`)

`scripts/moto.sh` starts it. Stock moto answers two calls differently from AWS, and
Terraform's AWS provider 3.39 then plans a change on every run, so an unchanged stack
would look drifted forever:

1. EKS CreateNodegroup without `remoteAccess`: moto records a default SSH key
   (`eksKeypair`); AWS records none. The provider plans to replace the node group.
2. EC2 CreateLaunchTemplate with request-level `TagSpecifications` (the template's own
   tags, which the provider sends for `tags` and `default_tags`): moto also copies them
   into the template's launch data; AWS keeps them apart. The provider plans to drop a
   `tag_specifications { resource_type = "launch-template" }` block on every run.

3. EKS in-place updates: moto knows UpdateNodegroupConfig but not DescribeUpdate,
   UpdateClusterVersion or UpdateNodegroupVersion. The provider waits on DescribeUpdate
   after every update, so any in-place change to a cluster or node group (a Kubernetes
   version, a node group's size, a new launch template version) would wait until its
   60-minute timeout. Here they exist, and each update succeeds at once.

Each fix is applied only when moto still has the code it corrects; otherwise the
server starts as it is and says so on stderr.

One more is not a fix but a stand-in, off unless asked for:

4. EC2 instance quotas: moto answers Service Quotas for `vpc` codes only; for `ec2`
   codes (On-Demand vCPUs per instance family, such as `L-1216C47A`) it answers
   NoSuchResourceException. With STACKPACK_MOTO_EC2_QUOTAS naming a JSON file of
   seeded values (`{"L-DB2E81BA": 8}`), GetServiceQuota for service code `ec2` and
   a code in that file answers in AWS's shape with that value. The file is read on
   every call (a test may change it between runs); every other call is moto's own.
"""
import copy
import sys


def fix_eks_remote_access():
    import moto.eks.models as eks

    if getattr(eks, "DEFAULT_REMOTE_ACCESS", None) != {"ec2SshKey": "eksKeypair"}:
        return "moto.eks.models.DEFAULT_REMOTE_ACCESS changed"
    eks.DEFAULT_REMOTE_ACCESS = None
    return None


def fix_launch_template_tags():
    from moto.ec2.responses.launch_templates import LaunchTemplates

    original = getattr(LaunchTemplates, "create_launch_template", None)
    if original is None or getattr(original, "stackpack_fixed", False):
        return "LaunchTemplates.create_launch_template missing"

    def create_launch_template(self):
        data = self._get_param("LaunchTemplateData", {}) or {}
        # A copy: moto may hand the original the same parsed list, which it extends.
        specs = copy.deepcopy(data.get("TagSpecifications"))
        result = original(self)
        template = self.ec2_backend.get_launch_template_by_name(self._get_param("LaunchTemplateName"))
        for version in template.versions:
            if specs is None:
                version.data.pop("TagSpecifications", None)
            else:
                version.data["TagSpecifications"] = specs
        return result

    create_launch_template.stackpack_fixed = True
    LaunchTemplates.create_launch_template = create_launch_template
    return None


def add_eks_updates():
    import uuid

    import moto.eks.urls as urls
    from moto.core.responses import ActionResult
    from moto.core.utils import utcnow
    from moto.eks.responses import EKSResponse

    if hasattr(EKSResponse, "describe_update"):
        return "moto has DescribeUpdate already"
    updates = {}  # update id -> update: every update this server has made

    def record(kind, params):
        update = {
            "id": str(uuid.uuid4()),
            "status": "Successful",
            "type": kind,
            "params": [{"type": key, "value": str(value)} for key, value in params.items() if value is not None],
            "createdAt": utcnow(),
            "errors": [],
        }
        updates[update["id"]] = update
        return update

    original_config = EKSResponse.update_nodegroup_config

    def update_nodegroup_config(self):
        result = original_config(self)
        update = getattr(result, "result", None) or getattr(result, "_result", None) or {}
        if isinstance(update, dict) and isinstance(update.get("update"), dict):
            updates[update["update"]["id"]] = update["update"]
        return result

    def update_cluster_version(self):
        cluster = self.eks_backend.describe_cluster(name=self._get_param("name"))
        version = self._get_param("version")
        cluster.version = version
        return ActionResult({"update": record("VersionUpdate", {"Version": version, "PlatformVersion": cluster.platformVersion})})

    def update_nodegroup_version(self):
        group = self.eks_backend.describe_nodegroup(
            cluster_name=self._get_param("name"), nodegroup_name=self._get_param("nodegroupName")
        )
        version = self._get_param("version")
        release = self._get_param("releaseVersion")
        template = self._get_param("launchTemplate")
        if version:
            group.version = version
        if release:
            group.release_version = release
        if template and group.launch_template is not None:
            group.launch_template.update({key: value for key, value in template.items() if value})
        return ActionResult({"update": record("VersionUpdate", {"Version": version, "ReleaseVersion": release})})

    def describe_update(self):
        update = updates.get(self._get_param("updateId"))
        if update is None:
            from moto.eks.exceptions import ResourceNotFoundException

            raise ResourceNotFoundException(
                clusterName=self._get_param("name"),
                nodegroupName=self._get_param("nodegroupName"),
                fargateProfileName=None,
                addonName=None,
                message=f"No update found for ID: {self._get_param('updateId')}",
            )
        return ActionResult({"update": update})

    EKSResponse.update_nodegroup_config = update_nodegroup_config
    EKSResponse.update_cluster_version = update_cluster_version
    EKSResponse.update_nodegroup_version = update_nodegroup_version
    EKSResponse.describe_update = describe_update
    dispatch = urls.response.dispatch
    urls.url_paths.update({
        "{0}/clusters/(?P<name>[^/]+)/updates$": dispatch,
        "{0}/clusters/(?P<name>[^/]+)/updates/(?P<updateId>[^/]+)$": dispatch,
        "{0}/clusters/(?P<name>[^/]+)/node-groups/(?P<nodegroupName>[^/]+)/update-version$": dispatch,
    })
    return None


# Names and ARNs as AWS gives them, for the codes a seeded file may hold.
EC2_QUOTA_NAMES = {
    "L-1216C47A": "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
    "L-DB2E81BA": "Running On-Demand G and VT instances",
    "L-417A185B": "Running On-Demand P instances",
    "L-1945791B": "Running On-Demand Inf instances",
    "L-2C3B7624": "Running On-Demand Trn instances",
    "L-6E869C2A": "Running On-Demand DL instances",
    "L-74FC7D96": "Running On-Demand F instances",
    "L-7295265B": "Running On-Demand X instances",
    "L-F7808C92": "Running On-Demand HPC instances",
}


def seed_ec2_quotas():
    """The stand-in for EC2 instance quotas (4. above): seeded, not emulated."""
    import json
    import os

    from moto.servicequotas.responses import ServiceQuotasResponse

    path = os.environ.get("STACKPACK_MOTO_EC2_QUOTAS")
    if not path:
        return None  # off: moto's own answers
    original = ServiceQuotasResponse.get_service_quota

    def get_service_quota(self):
        params = json.loads(self.body or "{}")
        code = params.get("QuotaCode")
        seeded = {}
        if params.get("ServiceCode") == "ec2" and os.path.exists(path):
            with open(path) as file:
                seeded = json.load(file)
        if code not in seeded:
            return original(self)
        return json.dumps({"Quota": {
            "ServiceCode": "ec2",
            "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
            "QuotaArn": f"arn:aws:servicequotas:{self.region}:{self.current_account}:ec2/{code}",
            "QuotaCode": code,
            "QuotaName": EC2_QUOTA_NAMES.get(code, code),
            "Value": float(seeded[code]),
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
            "UsageMetric": {
                "MetricNamespace": "AWS/Usage",
                "MetricName": "ResourceCount",
                "MetricDimensions": {"Class": "Standard/OnDemand", "Resource": "vCPU", "Service": "EC2", "Type": "Resource"},
                "MetricStatisticRecommendation": "Maximum",
            },
        }})

    ServiceQuotasResponse.get_service_quota = get_service_quota
    return None


def exit_with_owner(pid):
    """Stops this server when process `pid` is gone.

    A test that starts the emulator and is then killed (SIGKILL runs no cleanup) would
    otherwise leave it running until the machine is cleaned. The owner's start time is
    compared too, so a recycled process id does not keep the server alive.
    """
    import os
    import threading
    import time

    def start_time():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[19]
        except OSError:
            return None

    owner = start_time()
    if owner is None:
        sys.exit(f"moto-server.py: owner process {pid} is not running")

    def watch():
        while start_time() == owner:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def main():
    import os

    if os.environ.get("MOTO_OWNER_PID"):
        exit_with_owner(int(os.environ["MOTO_OWNER_PID"]))
    for fix in (fix_eks_remote_access, fix_launch_template_tags, add_eks_updates, seed_ec2_quotas):
        try:
            problem = fix()
        except Exception as error:  # a moto that moved its code: run it as it is
            problem = f"{type(error).__name__}: {error}"
        if problem:
            print(f"moto-server.py: {fix.__name__} not applied ({problem})", file=sys.stderr)

    from moto.server import main as serve

    serve(sys.argv[1:])


if __name__ == "__main__":
    main()
