"""The image's components, one module per concern, each an immutable image and its delta.

Kafka's `org.apache.kafka.image` *Image / *Delta classes: cluster (brokers, controllers),
topics and partitions, configs, client quotas, ACLs, SCRAM, delegation tokens, producer
ids, features, plus the opaque records kraftsim carries without modelling them.
"""
