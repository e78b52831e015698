"""Core: the data model, errors, configuration and the protocols every layer above codes against."""
