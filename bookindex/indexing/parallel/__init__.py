"""Parallel and distributed builds: one writer commits while local processes or Ray tasks build."""
