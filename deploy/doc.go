// Package deploy holds the generators and checks of joulemark's deployment
// files: the Prometheus configuration (prometheus/), Grafana provisioning
// (grafana/), docker-compose (compose/) and Kubernetes manifests
// (kubernetes/). The PrometheusRule is generated from rules/*.yml and the
// dashboards ConfigMap from dashboards/*.json; tests fail when either drifts
// from its source, when a YAML file does not parse, or when a Kubernetes
// object lacks what its kind requires.
package deploy

//go:generate go run ./internal/genrule -rules ../rules -out kubernetes/prometheusrule.yaml
//go:generate go run ../cmd/joulemark dashboards generate --out ../dashboards --configmap kubernetes/dashboards-configmap.yaml
