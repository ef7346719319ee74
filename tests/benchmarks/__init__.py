"""Benchmarks: measured on a real server, reported as figures and ratios, never as timed tests."""
