package deploy

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// movingTag is an image reference or kustomize/Helm tag that moves.
var movingTag = regexp.MustCompile(`(?m)(:latest\b|(newTag|tag):\s*["']?latest\b)`)

// joulemarkImage is a reference to one of the project's own images.
var joulemarkImage = regexp.MustCompile(`ghcr\.io/joulemark/joulemark(-bench)?:(\$\{[^}]*\}|[^\s"'$]+|\$[A-Z_]+)`)

// TestReleaseVersion: a release is traceable. No file under deploy/ uses a
// moving :latest tag; every reference to the project's images (manifests,
// kustomize newTag, compose) carries the chart's appVersion; the Dockerfile
// stamps its VERSION build argument into the binary (checked by building a
// probe with the Dockerfile's own -X flag) and labels both final images
// with it; docs/deploy.md's image-update step sets every kustomization's
// images.
func TestReleaseVersion(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	app := ch.Metadata.AppVersion
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 || strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".json") {
			return err // Go sources (these tests), dashboards' JSON and the chart's links to rules/ and dashboards/ are not deployment files
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := movingTag.Find(b); m != nil {
			t.Errorf("deploy/%s: moving tag %q; use the release's version (%s)", path, m, app)
		}
		for _, m := range joulemarkImage.FindAllSubmatch(b, -1) {
			if tag := string(m[2]); tag != app && tag != "${JOULEMARK_VERSION:-"+app+"}" && tag != "$VERSION" {
				t.Errorf("deploy/%s: %s, want the chart's appVersion %s", path, m[0], app)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkKustomizeTags(t, app)
	checkComposeVersion(t, app)
	checkDockerfileStamp(t)
	checkImageUpdateDocs(t)
}

// checkKustomizeTags: every kustomization pins its images to app.
func checkKustomizeTags(t *testing.T, app string) {
	t.Helper()
	for dir, images := range kustomizeImages(t) {
		for name, tag := range images {
			if tag != app {
				t.Errorf("%s/kustomization.yaml: image %s newTag %q, want the chart's appVersion %s", dir, name, tag, app)
			}
		}
	}
}

// kustomizeImages maps each kustomization directory under deploy/ to its
// images' newTag by name.
func kustomizeImages(t *testing.T) map[string]map[string]string {
	t.Helper()
	paths, _ := filepath.Glob("kubernetes/*kustomization.yaml")
	more, _ := filepath.Glob("kubernetes/*/kustomization.yaml")
	out := map[string]map[string]string{}
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Images []struct {
				Name   string `yaml:"name"`
				NewTag string `yaml:"newTag"`
			} `yaml:"images"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		dir := filepath.Join("deploy", filepath.Dir(p))
		out[dir] = map[string]string{}
		for _, im := range k.Images {
			out[dir][im.Name] = im.NewTag
		}
	}
	if len(out) < 3 {
		t.Fatalf("found %d kustomizations, want the base, bench and bench-sharded", len(out))
	}
	return out
}

// checkComposeVersion: compose builds and tags the image with app unless
// JOULEMARK_VERSION says otherwise.
func checkComposeVersion(t *testing.T, app string) {
	t.Helper()
	b, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	want := "${JOULEMARK_VERSION:-" + app + "}"
	for name, s := range c.Services {
		if !strings.HasPrefix(s.Image, "ghcr.io/joulemark/") {
			continue
		}
		if s.Image != "ghcr.io/joulemark/joulemark:"+want || s.Build.Args["VERSION"] != want {
			t.Errorf("compose %s: image %s, build arg VERSION %q; want both %s", name, s.Image, s.Build.Args["VERSION"], want)
		}
	}
}

// checkDockerfileStamp builds a probe with the -X flag of the Dockerfile's
// go build and checks the version reaches the binary; both final stages
// take VERSION and label the image with it.
func checkDockerfileStamp(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	m := regexp.MustCompile(`go build [^\n]*-X (\S+)=\$\{VERSION\}`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("Dockerfile: no go build with -X <package>.Version=${VERSION}")
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(df, -1)
	labelled := 0
	for _, st := range stages {
		if strings.Contains(st, " AS bench\n") || strings.Contains(st, " AS runtime\n") {
			if strings.Contains(st, "ARG VERSION") && strings.Contains(st, `org.opencontainers.image.version="${VERSION}"`) {
				labelled++
			}
		}
	}
	if labelled != 2 {
		t.Errorf("Dockerfile: %d of the 2 final stages (runtime, bench) take ARG VERSION and label org.opencontainers.image.version", labelled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", "-ldflags", "-X "+m[1]+"=9.8.7-probe", "./testdata/versionprobe").CombinedOutput()
	if err != nil {
		t.Fatalf("building the version probe with -X %s: %v\n%s", m[1], err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "9.8.7-probe" {
		t.Errorf("the Dockerfile's -X %s=${VERSION} does not stamp the version: the probe says %q", m[1], got)
	}
}

// checkImageUpdateDocs: docs/deploy.md's `kustomize edit set image` step
// sets every image of every kustomization, in its directory.
func checkImageUpdateDocs(t *testing.T) {
	t.Helper()
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, m := range regexp.MustCompile(`\(cd (\S+) && kustomize edit set image (\S+?)=`).FindAllStringSubmatch(string(doc), -1) {
		set[m[1]+" "+m[2]] = true
	}
	for dir, images := range kustomizeImages(t) {
		for name := range images {
			if !set[dir+" "+name] {
				t.Errorf("docs/deploy.md: no `(cd %s && kustomize edit set image %s=…)`", dir, name)
			}
		}
	}
}
