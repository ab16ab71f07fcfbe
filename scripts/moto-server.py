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

Each fix is applied only when moto still has the code it corrects; otherwise the
server starts as it is and says so on stderr.
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


def main():
    for fix in (fix_eks_remote_access, fix_launch_template_tags):
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
