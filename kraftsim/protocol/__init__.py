"""Kafka's wire formats: primitives, schema-driven messages, metadata framing, batches."""
