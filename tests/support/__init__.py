"""The tests' helpers: how they start crow, its model, its clients and its services (tests/README.md)."""
