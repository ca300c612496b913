"""kraftsim.sim.tools: what the command line shows of a cluster directory, for either engine.

  directory      which engine made a directory; a view of an event-engine cluster for kafka-features
  narrate        the timeline's notable events as lines for a person
  health         is the cluster healthy (`cluster status`'s first lines and exit status)
  leader_election  kafka-leader-election against a simulated cluster: its request, the tool's lines
  reassign_partitions  kafka-reassign-partitions --execute and --cancel: the request, the tool's lines
  tool_view      what a Kafka tool reads of a simulated cluster: the image, the broker it asks, its release
  describe_topics  kafka-topics --describe against a simulated cluster: the tool's lines
  describe_configs  kafka-configs --describe against a simulated cluster: the tool's lines
"""
