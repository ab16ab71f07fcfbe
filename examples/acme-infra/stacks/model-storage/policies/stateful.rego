# Stateful resources (buckets, databases) are never destroyed or replaced by an
# apply, unless the operator names the address: `--allow-replace ADDRESS`.
package main

import rego.v1

stateful_types := {
	"aws_s3_bucket",
	"aws_db_instance",
	"aws_rds_cluster",
	"aws_dynamodb_table",
	"aws_efs_file_system",
	"aws_elasticache_cluster",
	"aws_elasticache_replication_group",
}

allowed(address) if address in object.get(data, ["stackpack", "allow_replace"], [])

deny_stateful_replace contains {"msg": msg, "address": rc.address} if {
	some rc in input.resource_changes
	rc.type in stateful_types
	"delete" in rc.change.actions
	not allowed(rc.address)
	what := replace_or_destroy(rc.change.actions)
	msg := sprintf("stateful resource would be %v; name it with `--allow-replace %v` if that is intended", [what, rc.address])
}

replace_or_destroy(actions) := "replaced" if "create" in actions

replace_or_destroy(actions) := "destroyed" if not "create" in actions
