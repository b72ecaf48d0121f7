"""Where shared state lives: the embedded stores (default) or one PostgreSQL database.

``settings.StorageSettings`` chooses (``DOCUTHINKER_STORE_BACKEND=embedded|postgres``);
``postgres`` opens connection pools and applies the versioned migrations of ``migrations/``;
``local_server`` starts a private PostgreSQL (PyPI ``pgserver``, with pgvector) for tests and
``make run``.
"""
