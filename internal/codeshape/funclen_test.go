package codeshape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the longest a non-declarative function may be: a function
// a reader can hold in their head.
const maxLines = 80

// declarative are the functions allowed to be longer, and why: a
// dashboard builder is one literal, panel after panel; the stream parser
// is one state machine over the SSE grammar, clearer whole.
var declarative = map[string]string{
	"dashboards/benchmark.go Benchmark":             "dashboard builder",
	"dashboards/fleet.go Fleet":                     "dashboard builder",
	"benchjob/openai/client.go read":                "stream parser",
	"benchjob/openai/openaitest/server.go generate": "test server's scripted responses",
}

// TestFunctionLength fails on a function over maxLines lines outside
// declarative, naming file, function and length.
func TestFunctionLength(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			key := filepath.ToSlash(rel) + " " + fn.Name.Name
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if _, ok := declarative[key]; ok {
				seen[key] = true
				continue
			}
			if n > maxLines {
				t.Errorf("%s: %s is %d lines (at most %d): split it", fset.Position(fn.Pos()), fn.Name.Name, n, maxLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range declarative {
		if !seen[key] {
			t.Errorf("declarative names %s, which does not exist", key)
		}
	}
}
