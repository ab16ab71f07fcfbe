# Nothing is open to the whole internet, except HTTPS (443).
package main

import rego.v1

world := {"0.0.0.0/0", "::/0"}

only_https(rule) if {
	rule.from_port == 443
	rule.to_port == 443
}

open_to_world(rule) if {
	is_array(rule.cidr_blocks)
	some cidr in rule.cidr_blocks
	cidr in world
}

open_to_world(rule) if {
	is_array(rule.ipv6_cidr_blocks)
	some cidr in rule.ipv6_cidr_blocks
	cidr in world
}

deny_open_ingress contains {"msg": msg, "address": rc.address} if {
	some rc in input.resource_changes
	rc.type == "aws_security_group_rule"
	rule := rc.change.after
	rule.type == "ingress"
	open_to_world(rule)
	not only_https(rule)
	msg := sprintf("ingress from the whole internet on ports %v-%v; only 443 may be open to the world", [rule.from_port, rule.to_port])
}

deny_open_ingress contains {"msg": msg, "address": rc.address} if {
	some rc in input.resource_changes
	rc.type == "aws_security_group"
	is_object(rc.change.after)
	is_array(rc.change.after.ingress)
	some rule in rc.change.after.ingress
	open_to_world(rule)
	not only_https(rule)
	msg := sprintf("ingress from the whole internet on ports %v-%v; only 443 may be open to the world", [rule.from_port, rule.to_port])
}
