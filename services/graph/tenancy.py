"""Where a tenant's graph lives: one database per tenant, named from the tenant id.

Tenant ids allow upper case and '_' ("Acme_EU"); database names on Neo4j do not, and directory
names on case-insensitive file systems would collide. The name is a readable slug plus a hash
of the exact tenant id, so two tenants never share a database: "Acme" and "acme" get different
names, and the name is a valid Neo4j database name (letters, digits, '-', at most 63 characters).
"""

from __future__ import annotations

import hashlib
import re

_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def database_name(tenant: str, prefix: str = "dt-") -> str:
    slug = _NOT_SLUG.sub("-", tenant.lower()).strip("-")[:32] or "tenant"
    digest = hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:12]
    name = f"{prefix}{slug}-{digest}"
    return name if name[0].isalpha() else f"t{name}"
