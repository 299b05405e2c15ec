package codeshape

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/joulemark/joulemark/"

// roomsBelow are, for each top-level room, the other rooms it may import
// besides internal/: arrows run down only (docs/design.md, "Layout
// habits"). report/ is the format the applications share; deploy
// generates from dashboards; demo/, cmd/ and e2e/ are the top floor and
// import anything. internal/ imports only internal/.
var roomsBelow = map[string][]string{
	"internal":   {},
	"report":     {},
	"analyze":    {"report"},
	"production": {"report"},
	"runset":     {"report"},
	"benchjob":   {"report"},
	"exporter":   {},
	"dashboards": {},
	"rules":      {},
	"deploy":     {"dashboards"},
}

// topFloor import any room.
var topFloor = []string{"cmd", "demo", "e2e"}

// TestRoomsImportDown fails on an import from a top-level room to one
// beside or above it, naming the file and the import: in product code
// everywhere, and in internal/'s tests too (an application's tests may
// drive a neighbour, as integration tests do).
func TestRoomsImportDown(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		room := topRoom(filepath.ToSlash(rel))
		if slices.Contains(topFloor, room) || room != "internal" && strings.HasSuffix(path, "_test.go") {
			return nil
		}
		allowed, known := roomsBelow[room]
		if !known {
			t.Errorf("%s: room %q is not in roomsBelow: say which rooms it may import", rel, room)
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			to := topRoom(strings.TrimPrefix(p, module))
			if to != room && to != "internal" && !slices.Contains(allowed, to) {
				t.Errorf("%s imports %s: room %s may import only internal/ and %v", rel, p, room, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// topRoom is the first element of a slash path.
func topRoom(p string) string {
	room, _, _ := strings.Cut(p, "/")
	return room
}
