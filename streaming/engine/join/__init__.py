"""Stream-stream joins: two streams joined on keys and an event-time range (``join``: sides, configuration, frame and replays), and a
join of two live streams run as a run of the registry (``live_join``). What a join's rows and state mean is analysed in
:mod:`streaming.analysis.join`."""
