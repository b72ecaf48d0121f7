"""What the services share beyond the wire: the canonical keys and name limits of topics and entities (the graph
service merges on them, rag's graph sync computes them), the limits every entry point holds to alike (``limits``), and
the text helpers and text analytics that nlp serves and the orchestrator's local tools compute in process. Pure
functions and constants of the standard library."""
