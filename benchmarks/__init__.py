"""Benchmarks of the product, kept apart from its code: ``make bench`` runs :mod:`benchmarks.bench`."""
