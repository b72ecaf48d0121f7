"""DocuThinker's services: orchestrator, rag, nlp, graph, their shared runtime and the launcher."""

import os

# torch and faiss each run a GNU OpenMP thread team whose default (ACTIVE) wait policy spins
# between parallel regions. When anything else holds one of the cores (a concurrent request,
# another service, a build), every small parallel region then waits for a descheduled spinner:
# a one-query MiniLM encode measured 490 ms instead of 9 ms on a 2-core machine with one core
# busy. PASSIVE threads sleep instead; batch throughput on an idle machine stays within noise.
# Set here because every DocuThinker process imports this package before torch or faiss, and
# OpenMP reads the variable once, when its runtime loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
