"""Evaluation sets: a tenant's questions with expected answers, run against its library in the background,
scored by the benches' matching rule (``matching``), stored, compared and exported (docs/evaluation.md)."""
