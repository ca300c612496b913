"""The host pattern of a new ACL binding, as Kafka 4.4's controller checks it (KIP-1276).

From 4.4 a host may name a network in CIDR notation ("10.0.0.0/8", "fd00::/8"); the
controller refuses such a pattern below metadata.version 4.4-IV1 and refuses notation it
cannot parse. Before 4.4 the host is not checked at all, so "10.0.0.0/8" is just a
literal host name; which releases check is the policy `acl_host_validation` (its texts
are Kafka's, read from the released 4.4.0 jar).
"""

from __future__ import annotations

import ipaddress
import re

from kraftsim.controller.api_errors import NONE, ApiError
from kraftsim.versions import Catalog

POLICY = "acl_host_validation"
#: The metadata.version that first allows CIDR host patterns (capability cidr_acl_hosts).
CIDR_MV = "4.4-IV1"
_IPV4_CIDR = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})/(\d{1,2})$")


def is_cidr_host(host: str) -> bool:
    """A host pattern naming a network by prefix length: Kafka looks for a '/'."""
    return "/" in host


def cidr_problem(host: str) -> str | None:
    """Why `host` is not valid CIDR notation, in the words of the subnet parser Kafka uses
    (an IPv6 range when the pattern holds a ':'); None when it is valid."""
    if ":" in host:
        try:
            ipaddress.IPv6Network(host, strict=False)
        except ValueError:
            return f"Could not parse [{host}]"
        return None
    m = _IPV4_CIDR.match(host)
    if m is None:
        return f"Could not parse [{host}]"
    for part in m.groups()[:4]:
        if int(part) > 255:
            return f"Value [{int(part)}] not in range [0,255]"
    if int(m.group(5)) > 32:
        return f"Value [{int(m.group(5))}] not in range [0,32]"
    return None


def host_error(catalog: Catalog, host: str | None, cidr_supported: bool) -> ApiError:
    """The refusal of a new binding's host pattern, or NONE (always NONE before 4.4)."""
    if catalog.policy(POLICY) == "none":
        return NONE
    if not host:
        return ApiError("INVALID_REQUEST", catalog.policy_text(POLICY, "empty"))
    if host == "*" or not is_cidr_host(host):
        return NONE
    if not cidr_supported:
        return ApiError("UNSUPPORTED_VERSION", catalog.policy_text(POLICY, "cidr_mv").format(version=CIDR_MV))
    problem = cidr_problem(host)
    if problem is not None:
        return ApiError("INVALID_REQUEST", catalog.policy_text(POLICY, "invalid").format(host=host, reason=problem))
    return NONE
