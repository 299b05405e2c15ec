// Command genrule writes deploy/kubernetes/prometheusrule.yaml from the rule
// files in rules/ (run through `go generate ./deploy`).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/joulemark/joulemark/dashboards"
	"github.com/joulemark/joulemark/deploy"
)

func main() {
	rules := flag.String("rules", "rules", "directory of the Prometheus rule files")
	out := flag.String("out", "deploy/kubernetes/prometheusrule.yaml", "PrometheusRule file to write")
	flag.Parse()
	if err := run(*rules, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genrule:", err)
		os.Exit(1)
	}
}

func run(rulesDir, out string) error {
	files, err := deploy.ReadRuleFiles(rulesDir)
	if err != nil {
		return err
	}
	b, err := deploy.PrometheusRule(files)
	if err != nil {
		return err
	}
	return dashboards.WriteFileAtomic(out, b)
}
