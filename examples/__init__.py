"""Example models built with tensorplay_export.nn (MiniLM with real weights, a GPT decoder)."""
