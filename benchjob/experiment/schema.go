package experiment

import (
	"fmt"
	"iter"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkPath reports whether a dotted path ("workload.mean_output_tokens")
// names a field of T, following yaml tags (inline structs included; any key
// below a map). The error lists the keys known where the path went wrong.
func checkPath[T any](path []string) error {
	t := reflect.TypeFor[T]()
	for i, part := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			ft, ok := structField(t, part)
			if !ok {
				hint := ""
				if s := suggest(t, part); s != "" {
					hint = "; did you mean " + strings.Join(append(slices.Clone(path[:i]), s), ".") + "?"
				}
				return fmt.Errorf("unknown key %q (known at %s: %s%s)", strings.Join(path[:i+1], "."), where(path[:i]), strings.Join(structKeys(t), ", "), hint)
			}
			t = ft
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return fmt.Errorf("key %q: %s is not keyed by strings", strings.Join(path[:i+1], "."), where(path[:i]))
			}
			t = t.Elem()
		default:
			return fmt.Errorf("key %q: %s is a %s, it has no keys", strings.Join(path[:i+1], "."), where(path[:i]), t.Kind())
		}
	}
	return nil
}

func where(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	return strings.Join(path, ".")
}

// yamlName is the key yaml uses for a struct field, and whether it is inline.
func yamlName(f reflect.StructField) (name string, inline, skip bool) {
	if !f.IsExported() {
		return "", false, true
	}
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	inline = slices.Contains(strings.Split(opts, ","), "inline")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, inline, false
}

// yamlFields yields the yaml key and type of each field of struct t, the
// fields of inline structs in their place.
func yamlFields(t reflect.Type) iter.Seq2[string, reflect.Type] {
	return func(yield func(string, reflect.Type) bool) { walkYAMLFields(t, yield) }
}

func walkYAMLFields(t reflect.Type, yield func(string, reflect.Type) bool) bool {
	for f := range t.Fields() {
		name, inline, skip := yamlName(f)
		switch {
		case skip:
		case inline:
			it := f.Type
			for it.Kind() == reflect.Pointer {
				it = it.Elem()
			}
			if it.Kind() == reflect.Struct && !walkYAMLFields(it, yield) {
				return false
			}
		default:
			if !yield(name, f.Type) {
				return false
			}
		}
	}
	return true
}

func structField(t reflect.Type, key string) (reflect.Type, bool) {
	for name, ft := range yamlFields(t) {
		if name == key {
			return ft, true
		}
	}
	return nil, false
}

func structKeys(t reflect.Type) []string {
	var keys []string
	for name := range yamlFields(t) {
		keys = append(keys, name)
	}
	return keys
}

// splitPath splits and checks "a.b.c".
func splitPath(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("empty key")
	}
	parts := strings.Split(s, ".")
	if slices.Contains(parts, "") {
		return nil, fmt.Errorf("key %q has an empty part", s)
	}
	return parts, nil
}

// checkValue decodes value at path into a fresh T, so a wrong type is found
// up front with the value's line.
func checkValue[T any](path []string, value *yaml.Node) error {
	var t T
	return pathNode(path, value).Decode(&t)
}

// setOverride is one parsed --set.
type setOverride struct {
	text  string
	path  []string
	value *yaml.Node
}

// parseSets parses --set "section.field=value" (value in YAML: 4, 1.5, true,
// "[1, 2]", text) and checks each against T's schema.
func parseSets[T any](sets []string) ([]setOverride, error) {
	var out []setOverride
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("--set %q: want section.field=value", s)
		}
		path, err := splitPath(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("--set %q: %w", s, err)
		}
		if err := checkPath[T](path); err != nil {
			return nil, fmt.Errorf("--set %q: %w", s, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(v), &doc); err != nil {
			return nil, fmt.Errorf("--set %q: value: %w", s, err)
		}
		value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "", Line: 1, Column: 1}
		if len(doc.Content) > 0 {
			value = doc.Content[0]
		}
		if err := checkValue[T](path, value); err != nil {
			return nil, fmt.Errorf("--set %q: %w", s, err)
		}
		out = append(out, setOverride{text: s, path: path, value: value})
	}
	return out, nil
}

// axis is one sweep dimension.
type axis struct {
	path   []string
	label  string       // the name part: the leaf key, or the whole path when leaves collide
	values []*yaml.Node // in file order
	labels []string     // per value: the scalar text made name-safe, or its 1-based index
}

// parseAxes reads `sweep:` (a mapping of dotted key → non-empty list).
func parseAxes[T any](sweep *yaml.Node) ([]axis, error) {
	if sweep == nil || sweep.Kind == 0 || isNull(sweep) {
		return nil, nil
	}
	if sweep.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: sweep: want a mapping of key → list of values", sweep.Line)
	}
	var axes []axis
	leaves := map[string]int{}
	for i := 0; i < len(sweep.Content); i += 2 {
		k, v := sweep.Content[i], sweep.Content[i+1]
		path, err := splitPath(k.Value)
		if err == nil {
			err = checkPath[T](path)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: sweep: %w", k.Line, err)
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, fmt.Errorf("line %d: sweep: %s: want a non-empty list of values", v.Line, k.Value)
		}
		ax := axis{path: path, label: path[len(path)-1], values: v.Content}
		for j, val := range v.Content {
			if err := checkValue[T](path, val); err != nil {
				return nil, fmt.Errorf("sweep: %s: %w", k.Value, err)
			}
			label := fmt.Sprint(j + 1)
			if val.Kind == yaml.ScalarNode {
				label = sanitize(val.Value)
			}
			ax.labels = append(ax.labels, label)
		}
		leaves[ax.label]++
		axes = append(axes, ax)
	}
	for i := range axes {
		if leaves[axes[i].label] > 1 {
			axes[i].label = strings.Join(axes[i].path, ".")
		}
	}
	return axes, nil
}

// sanitize makes a value usable in a run name: anything but letters,
// digits, '.', '_' and '-' becomes '_'.
func sanitize(s string) string {
	if s == "" {
		return "empty"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// cartesian returns every combination of value indexes, the first axis
// outermost; one empty combination when there is no axis.
func cartesian(axes []axis) [][]int {
	combos := [][]int{{}}
	for _, ax := range axes {
		var next [][]int
		for _, c := range combos {
			for j := range ax.values {
				next = append(next, append(append([]int(nil), c...), j))
			}
		}
		combos = next
	}
	return combos
}

// suggest names the path below struct t an unknown key most likely meant,
// found from the names alone (no table of old names): the same words with
// a section split off (engine_pod: engine.pod), or the key it ends with
// (exporter_gpus: gpus); "" when nothing fits.
func suggest(t reflect.Type, key string) string {
	for name, ft := range yamlFields(t) {
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		rest, ok := strings.CutPrefix(key, name+"_")
		if ok && ft.Kind() == reflect.Struct {
			if _, found := structField(ft, rest); found {
				return name + "." + rest
			}
		}
	}
	for name := range yamlFields(t) {
		if strings.HasSuffix(key, "_"+name) {
			return name
		}
	}
	return ""
}

// unknownFieldRe matches yaml's error for an unknown key.
var unknownFieldRe = regexp.MustCompile(`field (\S+) not found in type (\S+)$`)

// withSuggestions appends "did you mean" to yaml's unknown-key errors,
// the type named in each looked up among the struct types below t.
func withSuggestions(t reflect.Type, errs []string) []string {
	types := map[string]reflect.Type{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || types[t.String()] != nil {
			return
		}
		types[t.String()] = t
		for f := range t.Fields() {
			walk(f.Type)
		}
	}
	walk(t)
	out := slices.Clone(errs)
	for i, e := range out {
		m := unknownFieldRe.FindStringSubmatch(e)
		if m == nil || types[m[2]] == nil {
			continue
		}
		if s := suggest(types[m[2]], m[1]); s != "" {
			out[i] = e + " (did you mean " + s + "?)"
		}
	}
	return out
}
