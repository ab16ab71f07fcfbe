# GPU pools have a ceiling: no node group of GPU instances may grow past it.
package main

import rego.v1

gpu_max_nodes := 16

deny_gpu_ceiling contains {"msg": msg, "address": rc.address} if {
	some rc in input.resource_changes
	rc.type == "aws_eks_node_group"
	group := rc.change.after
	is_object(group)
	contains(object.get(group, "ami_type", ""), "GPU")
	is_array(group.scaling_config)
	some scaling in group.scaling_config
	scaling.max_size > gpu_max_nodes
	msg := sprintf("GPU pool may grow to %v nodes; the ceiling is %v", [scaling.max_size, gpu_max_nodes])
}
