package cri

import "github.com/prometheus/client_golang/prometheus"

var (
	upDesc = prometheus.NewDesc("schedstatd_runtime_up",
		"1 if the last refresh from the container runtime (CRI) succeeded, else 0; labels then keep their last known values.", nil, nil)
	refreshesDesc = prometheus.NewDesc("schedstatd_runtime_refreshes_total",
		"Refreshes of the container and pod names from the container runtime.", nil, nil)
	refreshErrorsDesc = prometheus.NewDesc("schedstatd_runtime_refresh_errors_total",
		"Refreshes from the container runtime that failed: no socket, an error, or a call past its timeout.", nil, nil)
	containersDesc = prometheus.NewDesc("schedstatd_runtime_containers",
		"Containers (all states) in the cache of container runtime names.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Client) Describe(ch chan<- *prometheus.Desc) {
	ch <- upDesc
	ch <- refreshesDesc
	ch <- refreshErrorsDesc
	ch <- containersDesc
}

// Collect implements prometheus.Collector. It reads counters only and never
// waits on the runtime.
func (c *Client) Collect(ch chan<- prometheus.Metric) {
	up := 0.0
	if c.up.Load() {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(refreshesDesc, prometheus.CounterValue, float64(c.refreshes.Load()))
	ch <- prometheus.MustNewConstMetric(refreshErrorsDesc, prometheus.CounterValue, float64(c.failures.Load()))
	ch <- prometheus.MustNewConstMetric(containersDesc, prometheus.GaugeValue, float64(len(c.cache.Load().containers)))
}
