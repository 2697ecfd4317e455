"""Kafka from the lab's side, below the Kafka source: its terms (``kafka_terms``: a record's columns, value formats, name checks, offset
ranges), what a cluster holds asked with a Kafka client (``topics``) and a local broker (``broker``). The source itself is a source
kind (:mod:`streaming.engine.sources.kafka`); publishing a feed into a topic is a replay (:mod:`streaming.engine.run.publish`)."""
