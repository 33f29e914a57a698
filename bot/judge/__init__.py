"""The judge engine: rubrics, tiers, providers, records. Usable without GitHub (CLI, hook)."""
