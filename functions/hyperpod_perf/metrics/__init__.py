"""The fleet's time series over the alarm window: what every node did, minute by minute.

Pure code (no I/O): `signals` names each series as its exporter publishes it, `nodes` maps a
series to a cluster node by the labels the exporters and HyperPod's scrape configs carry,
`judge` turns aligned per-node series into findings. The Prometheus / AMP readers live in
`hyperpod_perf.aws.prometheus`; `hyperpod_perf.service.metrics` joins the two.
"""
