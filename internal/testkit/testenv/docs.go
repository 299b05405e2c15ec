package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// DocBlock is a ```yaml block of a page of docs/: the page's file name,
// the block, and the paragraph right after it.
type DocBlock struct {
	File, YAML, After string
}

// docYAML matches a ```yaml block and the paragraph after it (one blank
// line between them allowed).
var docYAML = regexp.MustCompile("(?s)```yaml\n(.*?)```([^\n]*\n\n?(?:[^\n]+\n)*)?")

// DocYAMLBlocks returns the ```yaml blocks of docs/*.md (root is the
// repository root, relative to the test) that have a top-level key top
// matches, and fails the test when there is none: a check of the docs'
// examples that finds nothing checks nothing.
func DocYAMLBlocks(t testing.TB, root string, top *regexp.Regexp) []DocBlock {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", root, err)
	}
	var out []DocBlock
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docYAML.FindAllStringSubmatch(string(b), -1) {
			if top.MatchString(m[1]) {
				out = append(out, DocBlock{File: filepath.Base(f), YAML: m[1], After: m[2]})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no ```yaml block in docs/ has a top-level key matching %s", top)
	}
	return out
}
