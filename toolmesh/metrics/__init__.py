"""Metrics both sides keep: call_metrics.py (calls by function and outcome, pods and the gateway)."""
