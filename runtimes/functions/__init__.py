"""What a function is: the author's SDK (decorators, Toolset, FunctionDefinition, Context),
schemas from type hints (schema.py), specs (spec.py), results (results.py), and the registry
that discovers a module's functions (discovery.py, registry.py). No process, no transport."""
