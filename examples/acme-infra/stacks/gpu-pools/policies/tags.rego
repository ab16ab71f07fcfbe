# Every resource that takes tags carries the ones that make the bill attributable.
# `tags_all` holds a resource's own tags and the provider's `default_tags`.
package main

import rego.v1

required_tags := {"cost-center", "environment", "owner"}

deny_required_tags contains {"msg": msg, "address": rc.address} if {
	some rc in input.resource_changes
	some action in rc.change.actions
	action in {"create", "update"}
	is_object(rc.change.after)
	tags := object.get(rc.change.after, "tags_all", null)
	is_object(tags)
	missing := required_tags - {key | some key, _ in tags}
	count(missing) > 0
	msg := sprintf("missing required tag(s) %v", [concat(", ", sort(missing))])
}
