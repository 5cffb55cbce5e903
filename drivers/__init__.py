"""Drivers: adapters that implement labtools' instrument interfaces for real instruments."""
