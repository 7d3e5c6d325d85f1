package chart

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The parts of the Prometheus Operator's monitoring.coreos.com/v1 kinds
// that the chart renders; a field outside them fails the strict decoding.

type relabeling struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	TargetLabel  string   `json:"targetLabel,omitempty"`
}

type endpoint struct {
	Port          string       `json:"port"`
	Path          string       `json:"path,omitempty"`
	Interval      string       `json:"interval,omitempty"`
	ScrapeTimeout string       `json:"scrapeTimeout,omitempty"`
	HonorLabels   bool         `json:"honorLabels,omitempty"`
	Relabelings   []relabeling `json:"relabelings,omitempty"`
}

type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel            string               `json:"jobLabel,omitempty"`
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []endpoint           `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel  string               `json:"jobLabel,omitempty"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []endpoint           `json:"endpoints"`
	} `json:"spec"`
}

// ruleGroups is a Prometheus rule file's content, and a PrometheusRule's
// spec.
type ruleGroups struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []struct {
			Alert       string            `json:"alert,omitempty"`
			Record      string            `json:"record,omitempty"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ruleGroups `json:"spec"`
}
