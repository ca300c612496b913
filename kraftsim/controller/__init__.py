"""kraftsim.controller: Kafka's controller rules as pure decisions, and the QuorumController
that commits them to a metadata log.

Each rule module decides one family of requests from a `ControllerContext` and returns a
`ControllerResult` (records + response, or a Kafka error); it changes nothing itself.
"""
