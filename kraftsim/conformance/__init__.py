"""Real Kafka as a differential oracle: fetch a release's jars, run its tools and nodes,
and compare what they print and write with what kraftsim prints and writes.

  dist           finding Java and Maven, fetching and caching a release's jars
  tools          running Kafka's tools as bounded subprocesses (many per JVM: java/ToolBatch)
  node           a live combined Kafka node on 127.0.0.1, always stopped
  live_trio      a live cluster of a controller and two brokers (three JVMs), always stopped: what
                 reregistration, isr_rejoin and unclean_offline stop and start brokers of
  kraftsim_side  kraftsim's own CLI run in-process, captured like a tool
  compare        comparing files (meta.properties, checkpoints, dumps) and tool texts
  cases          the conformance cases, cheapest first; data/policies.toml names the
                 documented differences
  run, roll      one release's cases; the rolling upgrade across releases
  report         the cases × releases table and the JSON lines
  snapshot_peer  Kafka's own snapshot decode, load, write and delta timed on a file (java/KafkaSnapshotPeer),
                 cold and warm, and the smallest heap its load completes in
"""
