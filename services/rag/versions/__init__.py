"""Document versions: a stable identity (a client's name, a source's path) with numbered versions.

A new version is ingested on a staging row beside the live one, re-embedding only chunks whose text
no earlier version had; when it is indexed, the live version's chunks, sections and vectors move to
the archive (``version_chunks``, ``version_sections``) and the new chunks take their place, in one
transaction. Searches read the live chunks as before; ``<id>@<n>`` in ``document_ids`` searches
version n (``index.VersionedIndex``). ``diff`` compares two versions, ``changes`` answers "what
changed" questions from it.
"""
