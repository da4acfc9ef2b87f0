"""Sample tool modules: what `make up` serves and the first code new users read.

Serve any of them with ``toolmesh runtime --module examples.weather`` (from the
repository root), or list their schemas with ``toolmesh functions --module ...``.

- `examples.weather`: simulated current weather, forecasts and packing advice;
  pydantic results, a hand-written `FunctionDefinition`, `ctx.invoke` composition.
- `examples.delivery`: a `Toolset` for a small online shop (products, orders,
  tracking) with state, clear errors and NumPy-style docstrings.
- `examples.arithmetic`: arithmetic as a `Toolset`, including a safe expression
  evaluator built on `ast`; reST-style docstrings.
- `examples.text`: summarise text, extract links and page details from HTML;
  a namespace set with `@toolmesh.function`, Google-style docstrings.
- `examples.knowledge`: search and question answering over the shop's bundled
  help-centre documents with a small BM25 index.
- `examples.streaming`: generator functions whose items are streamed as they are made.
- `examples.mcp_conformance`: the MCP conformance suite's fixture (tools, resources, prompts,
  completion), and `examples.mcp_conformance_asking`, its tools that ask their caller
  (`ctx.elicit`, `ctx.sample`, `ctx.list_roots`); served by `make conformance`
  (`examples/mcp_conformance.toml`), not in the default config.
"""
