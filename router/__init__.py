"""The embedding router: picks functions for free-text prompts (not built yet, issue 5)."""
