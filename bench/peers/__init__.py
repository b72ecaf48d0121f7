"""``make bench-peers``: DocuThinker beside Haystack 2.x and LlamaIndex on the same documents and questions."""
