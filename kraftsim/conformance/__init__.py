"""Real Kafka as a differential oracle: fetch a release's jars, run its tools and nodes,
and compare what they print and write with what kraftsim prints and writes.

  dist      finding Java and Maven, fetching and caching a release's jars
  tools     running one Kafka tool as a bounded subprocess
  node      a live combined Kafka node on 127.0.0.1, always stopped
  compare   comparing files (meta.properties, checkpoints) and tool texts
  cases     the conformance cases, cheapest first
  report    the cases × releases table and the JSON lines
"""
