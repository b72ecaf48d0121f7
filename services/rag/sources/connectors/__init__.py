"""One connector per kind of source: list the items with their change tokens, fetch one item's documents."""
