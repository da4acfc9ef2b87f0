"""Runtimes that load in the background: those whose functions come from outside the gateway.

background_load.py  one runtime's load, tried at once and again with backoff until it loads
backoff.py          how long to wait before the next attempt
"""
