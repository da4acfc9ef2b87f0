"""Sources of functions the gateway serves itself, with no pods: services it calls over their own
protocol (OpenAPI over HTTP), behind the same `Pool` as pods."""
