package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// cliCommand is one joulemark subcommand with its long flags.
type cliCommand struct {
	flags map[string]bool
	subs  map[string]*cliCommand
}

// kebab turns a Go field name into kong's default flag or command name
// (ListenAddress -> listen-address, APIKeyFile -> api-key-file).
func kebab(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// loadCLI reads the kong structs of cmd/joulemark (and internal/clientflags,
// benchjob and benchjob/openai, whose config is the bench flags, exporter
// and internal/gpu, whose options are the exporter's) from
// source, each type by package and name: commands
// (cmd:"" fields) and their flags (name:"" tag or the kebab field name,
// embedded structs inlined with their prefix).
func loadCLI(t *testing.T) *cliCommand {
	t.Helper()
	fset := token.NewFileSet()
	structs := map[string]*ast.StructType{}
	files, err := filepath.Glob("../cmd/joulemark/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("cmd/joulemark sources: %v", err)
	}
	// The flags of the remote parties (clientflags.Exporter, ...).
	party, err := filepath.Glob("../internal/clientflags/*.go")
	if err != nil || len(party) == 0 {
		t.Fatalf("internal/clientflags sources: %v", err)
	}
	files = append(files, party...)
	// The bench's experiment settings (benchjob.Config and its sections)
	// and the exporter's (exporter.Options, its sections, gpu.SimConfig).
	for _, dir := range []string{"../benchjob/*.go", "../benchjob/openai/*.go", "../exporter/*.go", "../internal/gpu/*.go"} {
		bench, err := filepath.Glob(dir)
		if err != nil || len(bench) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		files = append(files, bench...)
	}
	alias := map[string]string{} // type benchSettings benchjob.Config
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pkg := af.Name.Name
		ast.Inspect(af, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				switch x := ts.Type.(type) {
				case *ast.StructType:
					structs[pkg+"."+ts.Name.Name] = x
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok {
						alias[pkg+"."+ts.Name.Name] = id.Name + "." + x.Sel.Name
					}
				}
			}
			return true
		})
	}
	var build func(typeName, prefix string, into *cliCommand)
	build = func(typeName, prefix string, into *cliCommand) {
		if a, ok := alias[typeName]; ok {
			typeName = a
		}
		st := structs[typeName]
		if st == nil {
			return
		}
		pkg, _, _ := strings.Cut(typeName, ".")
		for _, f := range st.Fields.List {
			var tag reflect.StructTag
			if f.Tag != nil {
				tag = reflect.StructTag(strings.Trim(f.Tag.Value, "`"))
			}
			typ := ""
			switch x := f.Type.(type) {
			case *ast.Ident:
				typ = pkg + "." + x.Name
			case *ast.StarExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					typ = pkg + "." + id.Name
				}
			case *ast.SelectorExpr: // clientflags.Exporter
				if id, ok := x.X.(*ast.Ident); ok {
					typ = id.Name + "." + x.Sel.Name
				}
			}
			if len(f.Names) == 0 { // embedded: inline its flags
				build(typ, prefix+tag.Get("prefix"), into)
				continue
			}
			name := f.Names[0].Name
			if !ast.IsExported(name) || tag.Get("kong") == "-" {
				continue
			}
			flag := tag.Get("name")
			if flag == "" {
				flag = kebab(name)
			}
			if _, ok := tag.Lookup("cmd"); ok {
				sub := &cliCommand{flags: map[string]bool{}, subs: map[string]*cliCommand{}}
				build(typ, "", sub)
				into.subs[flag] = sub
				continue
			}
			if _, ok := tag.Lookup("arg"); ok {
				continue
			}
			if _, ok := tag.Lookup("embed"); ok {
				build(typ, prefix+tag.Get("prefix"), into)
				continue
			}
			into.flags[prefix+flag] = true
		}
	}
	root := &cliCommand{flags: map[string]bool{}, subs: map[string]*cliCommand{}}
	build("main.CLI", "", root)
	if len(root.subs) < 5 || len(root.flags) == 0 {
		t.Fatalf("read %d commands and %d global flags from cmd/joulemark: the parser missed the kong structs", len(root.subs), len(root.flags))
	}
	return root
}

// checkArgs checks a joulemark command line (without the program name): the
// subcommand exists and every --flag is one of its flags or a global one.
func checkArgs(root *cliCommand, args []string) []string {
	var errs []string
	cmd, path := root, []string{}
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !cmd.flags[name] && !root.flags[name] {
				errs = append(errs, "joulemark "+strings.Join(path, " ")+": no flag --"+name)
			}
			continue
		}
		if sub, ok := cmd.subs[a]; ok && !strings.HasPrefix(a, "-") {
			cmd, path = sub, append(path, a)
		}
	}
	if cmd == root {
		errs = append(errs, "no joulemark subcommand in "+strings.Join(args, " "))
	}
	return errs
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"ListenAddress": "listen-address", "APIKeyFile": "api-key-file", "Interval": "interval",
		"MaxRuns": "max-runs", "RunID": "run-id", "GPU": "gpu",
	} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCommandLinesUseRealFlags checks every joulemark command line in the
// compose file, the Kubernetes manifests and the Helm chart (rendered with
// each value set) against the CLI's kong structs.
func TestCommandLinesUseRealFlags(t *testing.T) {
	root := loadCLI(t)
	if errs := checkArgs(root, []string{"exporter", "--no-such-flag"}); len(errs) != 1 {
		t.Fatalf("checkArgs accepted an unknown flag: %v", errs)
	}
	var lines [][]string
	where := map[int]string{}

	c := loadCompose(t)
	for name, s := range c.Services {
		if strings.Contains(s.Image, "joulemark") {
			where[len(lines)] = "compose service " + name
			lines = append(lines, s.Command)
		}
	}
	for _, dir := range kustomizations {
		for _, o := range loadKustomization(t, dir).objects {
			for _, ps := range podSpecs(o.raw) {
				cs, _ := ps["containers"].([]any)
				for _, ci := range cs {
					cm, _ := ci.(map[string]any)
					if img, _ := cm["image"].(string); !strings.Contains(img, "joulemark") {
						continue
					}
					var args []string
					for _, a := range cm["args"].([]any) {
						args = append(args, a.(string))
					}
					where[len(lines)] = o.String()
					lines = append(lines, args)
				}
			}
		}
	}
	for _, vs := range helmValueSets {
		for _, o := range renderChart(t, vs.values) {
			for _, ps := range podSpecs(o.raw) {
				cs, _ := ps["containers"].([]any)
				for _, ci := range cs {
					cm, _ := ci.(map[string]any)
					var args []string
					for _, a := range cm["args"].([]any) {
						args = append(args, a.(string))
					}
					where[len(lines)] = "helm chart (" + vs.name + " values) " + o.String()
					lines = append(lines, args)
				}
			}
		}
	}
	if len(lines) < 6 {
		t.Fatalf("found only %d joulemark command lines", len(lines))
	}
	for i, l := range lines {
		for _, e := range checkArgs(root, l) {
			t.Errorf("%s: %s", where[i], e)
		}
	}
}

// podSpecs returns the pod specs in a workload object.
func podSpecs(raw map[string]any) []map[string]any {
	spec, _ := raw["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	ps, _ := tmpl["spec"].(map[string]any)
	if ps == nil {
		return nil
	}
	return []map[string]any{ps}
}
