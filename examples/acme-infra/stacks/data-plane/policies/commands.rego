# Nothing runs programs on the runner's machine: a `local-exec` provisioner or an
# `external` data source starts a command there, with the runner's credentials,
# and no plan shows what it does. A customer who wants the same guard for every
# vendor copies this file into the folder `[policy] policies` names in `runner.toml`.
package main

import rego.v1

root := input.configuration.root_module

calls(module) := object.get(module, "module_calls", {})

# The stack's modules with their address prefixes, two calls deep (Rego has no
# recursion: add a level for deeper stacks).
modules contains ["", root]

modules contains [sprintf("module.%s.", [a]), call.module] if {
	some a, call in calls(root)
}

modules contains [sprintf("module.%s.module.%s.", [a, b]), inner.module] if {
	some a, call in calls(root)
	some b, inner in calls(call.module)
}

deny_runner_commands contains {"msg": msg, "address": address} if {
	some [prefix, module] in modules
	some resource in object.get(module, "resources", [])
	some provisioner in object.get(resource, "provisioners", [])
	provisioner.type == "local-exec"
	address := concat("", [prefix, resource.address])
	msg := "a local-exec provisioner runs commands on the runner's machine"
}

deny_runner_commands contains {"msg": msg, "address": address} if {
	some [prefix, module] in modules
	some resource in object.get(module, "resources", [])
	resource.mode == "data"
	resource.type == "external"
	address := concat("", [prefix, resource.address])
	msg := "an external data source runs a program on the runner's machine"
}
