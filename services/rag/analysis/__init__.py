"""The full analysis pipeline (ingest -> rag -> crew -> finalize, plus sentiment, translation and
graph sync) and the transport of the crew and analysis RPCs."""
