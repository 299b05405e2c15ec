package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlFiles are every YAML file under deploy/.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && filepath.Base(p) == "templates" && strings.HasPrefix(p, "helm"+string(filepath.Separator)) {
			return filepath.SkipDir // Helm templates: YAML once rendered (helm_test.go)
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 15 {
		t.Fatalf("only %d YAML files found under deploy/", len(out))
	}
	return out
}

// documents decodes every YAML document of b (yaml.v3 rejects duplicate
// keys and malformed input).
func documents(b []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var m any
		if err := n.Decode(&m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		switch v := m.(type) {
		case map[string]any:
			docs = append(docs, v)
		case []any: // file_sd target lists
			for _, e := range v {
				em, ok := e.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("document %d: list item %T, want a mapping", i, e)
				}
				docs = append(docs, em)
			}
		case nil:
		default:
			return nil, fmt.Errorf("document %d: top level is %T, want a mapping or a list", i, m)
		}
	}
}

func TestEveryYAMLFileParses(t *testing.T) {
	for _, p := range yamlFiles(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := documents(b)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(docs) == 0 {
			t.Errorf("%s: no YAML document", p)
		}
	}
}

func TestDocumentsRejectsBadYAML(t *testing.T) {
	for _, bad := range []string{
		"a: 1\na: 2\n",   // duplicate key
		"a: [1, 2\n",     // unterminated flow
		"- 1\n- 2\n",     // list of scalars
		"a: 1\n---\n3\n", // scalar document
	} {
		if _, err := documents([]byte(bad)); err == nil {
			t.Errorf("documents(%q): no error", bad)
		}
	}
}
