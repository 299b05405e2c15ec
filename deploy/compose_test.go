package deploy

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type composeService struct {
	Image       string            `yaml:"image"`
	Build       composeBuild      `yaml:"build"`
	Profiles    []string          `yaml:"profiles"`
	Runtime     string            `yaml:"runtime"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Secrets     []string          `yaml:"secrets"`
	Volumes     []string          `yaml:"volumes"`
	Networks    map[string]struct {
		Aliases []string `yaml:"aliases"`
	} `yaml:"networks"`
}

type composeBuild struct {
	Context    string            `yaml:"context"`
	Dockerfile string            `yaml:"dockerfile"`
	Target     string            `yaml:"target"`
	Args       map[string]string `yaml:"args"`
}

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// mounts returns a service's volume mounts as target -> source.
func mounts(s composeService) map[string]string {
	m := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			m[parts[1]] = parts[0]
		}
	}
	return m
}

func TestCompose(t *testing.T) {
	c := loadCompose(t)
	for _, name := range []string{"prometheus", "grafana", "exporter", "engine", "exporter-sim", "engine-sim", "bench"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("compose: no service %s", name)
		}
	}
	prom := c.Services["prometheus"]
	if !slices.Contains(prom.Command, "--web.enable-remote-write-receiver") {
		t.Error("compose prometheus: remote-write receiver not enabled")
	}
	pm := mounts(prom)
	if pm["/etc/prometheus/prometheus.yml"] != "../prometheus/prometheus.yml" || pm["/etc/prometheus/rules"] != "../../rules" || pm["/etc/prometheus/targets"] != "../prometheus/targets" {
		t.Errorf("compose prometheus: want the deploy config, its targets and rules/ mounted under /etc/prometheus: %v", pm)
	}
	exp := c.Services["exporter"]
	if exp.Runtime != "nvidia" || exp.Environment["NVIDIA_VISIBLE_DEVICES"] == "" || !slices.Contains(exp.Command, "--gpu=nvml") {
		t.Errorf("compose exporter: want the NVIDIA runtime, NVIDIA_VISIBLE_DEVICES and --gpu=nvml: %+v", exp)
	}

	// Every bind-mount source exists (the runs directory is the user's).
	for name, s := range c.Services {
		for target, src := range mounts(s) {
			if !strings.HasPrefix(src, ".") || target == "/runs" {
				continue
			}
			if _, err := os.Stat(filepath.Join("compose", src)); err != nil {
				t.Errorf("compose %s: mount source %s: %v", name, src, err)
			}
		}
		for _, sec := range s.Secrets {
			if _, ok := c.Secrets[sec]; !ok {
				t.Errorf("compose %s: secret %s is not declared", name, sec)
			}
		}
		if df := s.Build.Dockerfile; df != "" {
			d, err := os.ReadFile(filepath.Join("compose", s.Build.Context, df))
			if err != nil {
				t.Errorf("compose %s: %v", name, err)
			} else if tgt := s.Build.Target; !bytes.Contains(d, []byte(" AS "+tgt+"\n")) {
				t.Errorf("compose %s: Dockerfile has no stage %s", name, tgt)
			}
		}
	}
	readme, _ := os.ReadFile("compose/secrets/README.md")
	for name, s := range c.Secrets {
		if !strings.HasPrefix(s.File, "./secrets/") || !bytes.Contains(readme, []byte(strings.TrimPrefix(s.File, "./"))) {
			t.Errorf("compose secret %s: file %s must be under ./secrets/ and explained in secrets/README.md", name, s.File)
		}
	}

	// The scrape targets resolve in both profiles: service names or aliases.
	names := map[string][]string{}
	for name, s := range c.Services {
		hosts := []string{name}
		for _, n := range s.Networks {
			hosts = append(hosts, n.Aliases...)
		}
		for _, p := range s.Profiles {
			names[p] = append(names[p], hosts...)
		}
	}
	targets, _ := filepath.Glob("prometheus/targets/*.yml")
	for _, f := range targets {
		b, _ := os.ReadFile(f)
		var groups []struct {
			Targets []string `yaml:"targets"`
		}
		if err := yaml.Unmarshal(b, &groups); err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			for _, tg := range g.Targets {
				host, _, _ := strings.Cut(tg, ":")
				for _, p := range []string{"gpu", "sim"} {
					if !slices.Contains(names[p], host) {
						t.Errorf("%s: target %s does not resolve in compose profile %s", f, tg, p)
					}
				}
			}
		}
	}
}

// TestGrafanaProvisioning: the data source points at the compose
// Prometheus and the dashboard provider at where compose mounts dashboards/.
func TestGrafanaProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, URL string
			JSONData             map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	b, err := os.ReadFile("grafana/provisioning/datasources/joulemark.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatal(err)
	}
	c := loadCompose(t)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" {
		t.Fatalf("datasource provisioning: want apiVersion 1 and one prometheus data source: %+v", ds)
	}
	u, err := url.Parse(ds.Datasources[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Services[u.Hostname()]; !ok {
		t.Errorf("data source URL %s: no compose service %s", u, u.Hostname())
	}
	if ds.Datasources[0].JSONData["timeInterval"] != "1s" {
		t.Error("data source timeInterval should be the exporter scrape interval, 1s")
	}

	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	b, err = os.ReadFile("grafana/provisioning/dashboards/joulemark.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &dp); err != nil {
		t.Fatal(err)
	}
	if dp.APIVersion != 1 || len(dp.Providers) != 1 || dp.Providers[0].Type != "file" {
		t.Fatalf("dashboard provisioning: want apiVersion 1 and one file provider: %+v", dp)
	}
	gm := mounts(c.Services["grafana"])
	if gm[dp.Providers[0].Options.Path] != "../../dashboards" {
		t.Errorf("compose grafana does not mount dashboards/ at the provider path %s: %v", dp.Providers[0].Options.Path, gm)
	}
	if gm["/etc/grafana/provisioning"] != "../grafana/provisioning" {
		t.Errorf("compose grafana does not mount the provisioning: %v", gm)
	}
	if home := c.Services["grafana"].Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" {
		rel := strings.TrimPrefix(home, dp.Providers[0].Options.Path+"/")
		if _, err := os.Stat(filepath.Join("..", "dashboards", rel)); err != nil {
			t.Errorf("Grafana home dashboard %s: %v", home, err)
		}
	}
}
